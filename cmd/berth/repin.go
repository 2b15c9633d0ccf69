package main

import "github.com/berthdev/berth/internal/cli"

func init() {
	for _, c := range cli.Commands() {
		if c.Name == "repin" {
			registerCLI(c)
		}
	}
}

// Command images builds berth's container images without a Docker daemon
// (`make images`) and pushes them (`make push`). See package
// internal/images.
//
//	go run ./hack/images binaries
//	go run ./hack/images build -bin DIR -out bin/images -revision SHA -epoch UNIX
//	go run ./hack/images push -in bin/images -registry REGISTRY -tag TAG [-insecure]
//
// binaries prints the commands (./cmd/<name>) the images carry, one per
// line, for the Makefile to build: the image list (images.Images) is the
// only place an image is added.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/berthdev/berth/internal/images"
	"github.com/berthdev/berth/version"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: images binaries|build|push [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "binaries":
		for _, b := range images.Binaries() {
			fmt.Println(b)
		}
	case "build":
		err = build(os.Args[2:])
	case "push":
		err = push(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want binaries, build or push", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
}

// entry is one line of index.json.
type entry struct {
	Name   string `json:"name"`
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	Size   int64  `json:"compressedBytes"`
	Raw    int64  `json:"uncompressedBytes"`
	File   string `json:"file"`
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	bin := fs.String("bin", "", "folder of the static binaries")
	out := fs.String("out", "bin/images", "where the tarballs go")
	revision := fs.String("revision", "unknown", "the source revision (git commit)")
	epoch := fs.Int64("epoch", 0, "the images' time, seconds since 1970 (the commit's time)")
	_ = fs.Parse(args)
	if *bin == "" {
		return fmt.Errorf("build: -bin is required (the folder of the static binaries: go run ./hack/images binaries)")
	}
	index, err := buildAll(*bin, *out, *revision, time.Unix(*epoch, 0))
	if err != nil {
		return err
	}
	for _, e := range index {
		fmt.Printf("%-18s %s %s %6.1f MiB compressed, %6.1f MiB uncompressed\n",
			e.Name, e.Ref, e.Digest, float64(e.Size)/(1<<20), float64(e.Raw)/(1<<20))
	}
	return nil
}

// buildAll builds every image from the binaries in bin, writes each as
// out/<name>.tar tagged at berth's registry and version, and the listing
// out/index.json.
func buildAll(bin, out, revision string, epoch time.Time) ([]entry, error) {
	imgs, err := images.BuildAll(bin, revision, epoch)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	var index []entry
	for _, im := range images.Images {
		img := imgs[im.Name]
		ref := im.Ref(version.Registry, version.Version)
		file := filepath.Join(out, im.Name+".tar")
		if err := images.WriteTarball(img, ref, file); err != nil {
			return nil, err
		}
		digest, err := img.Digest()
		if err != nil {
			return nil, err
		}
		size, raw, err := images.Sizes(img)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", im.Name, err)
		}
		index = append(index, entry{Name: im.Name, Ref: ref, Digest: digest.String(), Size: size, Raw: raw, File: file})
	}
	data, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		return nil, err
	}
	return index, os.WriteFile(filepath.Join(out, "index.json"), append(data, '\n'), 0o644)
}

func push(args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	in := fs.String("in", "bin/images", "where `make images` wrote the tarballs")
	registry := fs.String("registry", version.Registry, "registry and path to push to")
	tag := fs.String("tag", version.Version, "tag to push")
	insecure := fs.Bool("insecure", false, "plain HTTP (a local registry)")
	_ = fs.Parse(args)
	ctx := context.Background()
	for _, im := range images.Images {
		img, err := tarball.ImageFromPath(filepath.Join(*in, im.Name+".tar"), nil)
		if err != nil {
			return fmt.Errorf("%s: %w (run make images first)", im.Name, err)
		}
		ref := im.Ref(*registry, *tag)
		if err := images.Push(ctx, img, ref, *insecure); err != nil {
			return err
		}
		fmt.Println("pushed", ref)
	}
	return nil
}

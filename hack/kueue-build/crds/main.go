// Command crds writes the CustomResourceDefinitions of a YAML stream (the
// `kubectl kustomize` build of Kueue's config/default, read from stdin)
// into a folder, one file per CRD named after it, as they are: the
// Makefile's generate-kueue-crds step. Every other object is left out.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crds <dir> < kustomize-output.yaml")
		os.Exit(2)
	}
	n, err := write(os.Stdin, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "crds:", err)
		os.Exit(1)
	}
	if n == 0 {
		fmt.Fprintln(os.Stderr, "crds: no CustomResourceDefinition in the input")
		os.Exit(1)
	}
}

// write writes each CRD document of r to dir/<name>.yaml and returns how
// many it wrote.
func write(r io.Reader, dir string) (int, error) {
	in, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	docs, err := documents(in)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, doc := range docs {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return n, fmt.Errorf("document %d: %w", n, err)
		}
		if head.Kind != "CustomResourceDefinition" {
			continue
		}
		if head.Metadata.Name == "" || filepath.Base(head.Metadata.Name) != head.Metadata.Name {
			return n, fmt.Errorf("a CustomResourceDefinition named %q", head.Metadata.Name)
		}
		if err := os.WriteFile(filepath.Join(dir, head.Metadata.Name+".yaml"), doc, 0o644); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// documents splits a YAML stream on its "---" lines.
func documents(in []byte) ([][]byte, error) {
	var out [][]byte
	var cur bytes.Buffer
	flush := func() {
		if len(bytes.TrimSpace(cur.Bytes())) > 0 {
			out = append(out, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	sc := bufio.NewScanner(bytes.NewReader(in))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if sc.Text() == "---" {
			flush()
			continue
		}
		cur.Write(sc.Bytes())
		cur.WriteByte('\n')
	}
	flush()
	return out, sc.Err()
}

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// freeAddress is a 127.0.0.1 address with a port free right now, for the
// reconciler's --pprof-address.
func freeAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// saveHeapProfile writes the heap profile the reconciler serves on addr
// (after a garbage collection: gc=1) to file.
func saveHeapProfile(addr, file string) error {
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/debug/pprof/heap: %s", addr, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

//go:build !amd64

package main

import (
	"fmt"
	"os"
	"runtime"
)

// init refuses to run on an architecture the BPF programs and the call-site
// decoding were not written for, before main parses anything: the command
// builds there (for vetting and cross-compiling) but does nothing.
func init() {
	fmt.Fprintln(os.Stderr, unsupportedMessage(runtime.GOOS, runtime.GOARCH))
	os.Exit(1)
}

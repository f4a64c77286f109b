//go:build linux

package bpf

import (
	"crypto/sha256"
	"encoding/hex"
)

// BuildID names this build of the BPF object: the first 12 hex digits of
// the SHA-256 of the embedded object file. State pinned by one build (the
// agent's maps and links) is reused only by the same build.
func BuildID() string {
	sum := sha256.Sum256(_MpiprobeBytes)
	return hex.EncodeToString(sum[:6])
}

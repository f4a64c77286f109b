// Package dist holds what `make install` puts on a node besides the
// binary: mpiprobe.service, the systemd unit of the node-wide agent
// (`mpiprobe agent`), a template whose @BINDIR@ and @DOCDIR@ the Makefile
// replaces. The package has no code; its tests install into a temporary
// root with the real make and check the unit with systemd-analyze.
package dist

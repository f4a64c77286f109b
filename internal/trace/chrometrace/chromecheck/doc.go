// Package chromecheck checks that a document follows the rules of the
// Trace Event Format that Perfetto and chrome://tracing rely on, for the
// tests of mpiprobe's timeline export. It reads the document as a stream,
// so that traces of millions of events check in little memory.
package chromecheck

// Package layering holds no code: its test checks that the imports between
// mpiprobe's packages follow the map in docs/architecture.md, so that data
// walks one way (maps → snapshot → agg → thresholds → report) and no mode
// imports another.
//
// Each package of the module has a layer; a package may import only
// packages of lower layers. The modes (the per-job session, the agent,
// status) share a layer, so none can import another. A new package must be
// given its layer in the table of layering_test.go, and the map in
// docs/architecture.md, before the test passes again.
package layering

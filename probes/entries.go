package probes

import (
	"fmt"
	"slices"
)

// EntryStatus says whether one catalog event could be attached in one library
// of a process, and why not: a row of `mpiprobe probes`.
type EntryStatus struct {
	Event    string
	Level    Level
	Library  Library
	File     string
	Attached bool
	// Reason says why the entry is unavailable; empty when attached.
	Reason string
	// Layout says where the struct layout the entry reads came from, e.g.
	// "opal_free_list_t from verified build 85e4…"; empty when it reads none.
	Layout string `json:",omitempty"`
}

// Entries lists every (event, library) of the catalog for one process,
// in catalog order: attached in the files of targets (st are the
// Attacher's statuses), unavailable where the symbols are missing, or
// where the process maps no such library at all.
func Entries(cat Catalog, pid int, targets []Target, st []Status) []EntryStatus {
	var out []EntryStatus
	for _, e := range cat.Events {
		var libs []Library
		for _, p := range e.Probes {
			if !slices.Contains(libs, p.Library) {
				libs = append(libs, p.Library)
			}
		}
		for _, lib := range libs {
			found := false
			for _, s := range st {
				if s.Event != e.ID || s.Library != lib {
					continue
				}
				found = true
				out = append(out, EntryStatus{Event: e.ID, Level: e.Level, Library: lib, File: s.File, Attached: s.Attached, Reason: s.Reason, Layout: s.Layout})
			}
			if found {
				continue
			}
			reason := fmt.Sprintf("library not loaded: pid %d maps no %s file", pid, lib)
			for _, t := range targets {
				if t.Library == lib {
					reason = "not attached: " + t.Display + " was not tried"
				}
			}
			out = append(out, EntryStatus{Event: e.ID, Level: e.Level, Library: lib, Reason: reason})
		}
	}
	return out
}

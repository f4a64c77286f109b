package probes

import (
	"errors"
	"slices"
	"sync"

	"github.com/cilium/ebpf/link"
)

// fileLinks is the bookkeeping every attacher shares: the links made in
// library files, each file (device, inode) attached once as each library
// it is (Open MPI 5.0's libmpi.so is also its ob1 component), and the
// rollback of what a failed Add made.
type fileLinks struct {
	done  map[fileAs]bool
	files map[[2]uint64]bool // attached as every library (skipFile)
	links []link.Link
}

// fileAs is a file as one library.
type fileAs struct {
	dev, ino uint64
	lib      Library
}

func (t Target) fileAs() fileAs { return fileAs{t.Dev, t.Inode, t.Library} }

// skipFile marks a file as attached already, as whatever library, e.g. by
// an earlier agent whose pinned links still run.
func (s *fileLinks) skipFile(dev, ino uint64) {
	if s.files == nil {
		s.files = map[[2]uint64]bool{}
	}
	s.files[[2]uint64{dev, ino}] = true
}

// skip marks a file as attached already as the target's library.
func (s *fileLinks) skip(t Target) {
	if s.done == nil {
		s.done = map[fileAs]bool{}
	}
	s.done[t.fileAs()] = true
}

// add attaches each target not attached before with attach, which returns
// the links it made (also those made before it failed midway) and whether
// the file is one it probes (false leaves it to be tried again). onFile,
// when set, is given the links of each file that has some, before the file
// counts as attached; its error fails the file. On an error the links this
// call made, in every file, are closed, and those files stay to be tried
// again; the earlier ones are kept.
func (s *fileLinks) add(targets []Target, onFile func(Target, []link.Link) error, attach func(Target) (links []link.Link, ok bool, err error)) error {
	var made []link.Link
	var attached []Target
	for _, t := range targets {
		if s.done[t.fileAs()] || s.files[[2]uint64{t.Dev, t.Inode}] || slices.ContainsFunc(attached, func(o Target) bool { return o.fileAs() == t.fileAs() }) {
			continue
		}
		links, ok, err := attach(t)
		if err == nil && ok && onFile != nil && len(links) > 0 {
			err = onFile(t, links)
		}
		made = append(made, links...)
		if err != nil {
			_ = closeLinks(made)
			return err
		}
		if ok {
			attached = append(attached, t)
		}
	}
	for _, t := range attached {
		s.skip(t)
	}
	s.links = append(s.links, made...)
	return nil
}

// take returns the live links and forgets them.
func (s *fileLinks) take() []link.Link {
	ls := s.links
	s.links = nil
	return ls
}

// close detaches every link, one after the other.
func (s *fileLinks) close() error { return closeLinks(s.take()) }

// closeAtOnce detaches every link, all at the same time: each
// uprobe_multi link waits for an RCU grace period as it is detached
// (30-45 ms on Linux 6.18), and so the waits overlap instead of adding up.
func (s *fileLinks) closeAtOnce() error {
	links := s.take()
	errs := make([]error, len(links))
	var wg sync.WaitGroup
	for i, l := range links {
		wg.Go(func() { errs[i] = l.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// closeLinks detaches every link and reports every failure.
func closeLinks(ls []link.Link) error {
	var errs []error
	for _, l := range ls {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

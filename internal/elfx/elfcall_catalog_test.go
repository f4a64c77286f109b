package elfx_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mpiprobe/mpiprobe/internal/discover"
	"github.com/mpiprobe/mpiprobe/internal/elfx"
	"github.com/mpiprobe/mpiprobe/internal/mpitest"
	"github.com/mpiprobe/mpiprobe/probes"
)

// callSite is one call-site probe of the catalog: calls from Symbol to
// CallTo in a Library file.
type callSite struct {
	lib        probes.Library
	fn, callee string
}

// catalogCallSites lists the catalog's call-site probes, each once.
func catalogCallSites() []callSite {
	var out []callSite
	for _, e := range probes.Full().Events {
		for _, p := range e.Probes {
			c := callSite{p.Library, p.Symbol, p.CallTo}
			if p.CallTo != "" && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// debianFiles returns the installed Debian file of each library that
// Classify recognises in the system library directories.
func debianFiles(t testing.TB) map[probes.Library]string {
	var paths []string
	for _, glob := range []string{
		"/usr/lib/x86_64-linux-gnu/*.so.*",
		"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so",
	} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	out := map[probes.Library]string{}
	for _, p := range paths {
		if lib, ok := discover.Classify(p); ok && out[lib] == "" {
			out[lib] = p
		}
	}
	return out
}

// TestCatalogSitesOnDebian runs Sites for every call-site probe of the
// catalog on the installed Debian library it names, and compares with
// objdump's reading of the same function: the probe must find a site,
// and exactly objdump's calls and jumps to the callee.
func TestCatalogSitesOnDebian(t *testing.T) {
	if _, err := exec.LookPath("objdump"); err != nil {
		mpitest.Require(t, "objdump not installed")
	}
	sites := catalogCallSites()
	if len(sites) == 0 {
		t.Fatal("the catalog has no call-site probe: the test tests nothing")
	}
	files := debianFiles(t)
	dis := map[string]elfx.ObjdumpFile{}
	for _, c := range sites {
		t.Run(string(c.lib)+"/"+c.fn+"→"+c.callee, func(t *testing.T) {
			path := files[c.lib]
			if path == "" {
				mpitest.Require(t, "Debian's "+string(c.lib)+" library")
			}
			f, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := elfx.Sites(f, c.fn, c.callee)
			if err != nil {
				t.Fatalf("Sites(%s): %v", path, err)
			}
			if _, ok := dis[path]; !ok {
				dis[path] = elfx.Objdump(t, path)
			}
			want := dis[path].Sites(c.fn, c.callee)
			if len(got) == 0 || !slices.Equal(got, want) {
				t.Errorf("Sites in %s = %#x, objdump says %#x", path, got, want)
			}
		})
	}
}

// BenchmarkCatalogDecode decodes each function the catalog's call-site
// probes scan, on the installed Debian libraries: decode/fn is the
// decoding alone, decode/all every such function in turn, and sites/fn→callee
// the whole of Sites (symbol tables and PLT too).
func BenchmarkCatalogDecode(b *testing.B) {
	files := debianFiles(b)
	var all [][]byte
	seen := map[string]bool{}
	for _, c := range catalogCallSites() {
		path := files[c.lib]
		if _, err := os.Stat(path); path == "" || err != nil {
			b.Skipf("no Debian %s", c.lib)
		}
		f, err := elf.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if !seen[path+" "+c.fn] {
			seen[path+" "+c.fn] = true
			code, err := elfx.FunctionCode(f, c.fn)
			if err != nil {
				b.Fatal(err)
			}
			all = append(all, code)
			b.Run("decode/"+c.fn, func(b *testing.B) {
				b.SetBytes(int64(len(code)))
				for b.Loop() {
					if err := elfx.DecodeCode(code); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run("sites/"+c.fn+"→"+c.callee, func(b *testing.B) {
			for b.Loop() {
				if _, err := elfx.Sites(f, c.fn, c.callee); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("decode/all", func(b *testing.B) {
		n := 0
		for _, code := range all {
			n += len(code)
		}
		b.SetBytes(int64(n))
		for b.Loop() {
			for _, code := range all {
				if err := elfx.DecodeCode(code); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

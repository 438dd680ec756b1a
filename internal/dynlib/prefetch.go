package dynlib

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/strata-ir/strata/logs"
)

// EnvPrefetch names the environment variable whose value "off" turns
// Prefetch off.
const EnvPrefetch = "STRATA_PREFETCH"

// Prefetch asks the kernel, in the background, to read each of paths
// (files the process is about to map: a library before its dlopen, the
// executable's own code) into the page cache, all at once and
// sequentially. On a machine whose disk cache is cold (a fresh machine's
// first process) the dynamic loader otherwise reads a library of hundreds
// of megabytes page by page as it faults, holding its one lock, so that
// cuBLASLt's and cuDNN's loads, and later the first use of their kernels,
// run one after the other at the disk's latency. Paths that are empty or
// cannot be opened are skipped; each file is prefetched once a process.
// Logged under the topic compile.
func Prefetch(paths ...string) {
	if os.Getenv(EnvPrefetch) == "off" {
		return
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, dup := prefetched.LoadOrStore(p, true); dup {
			continue
		}
		go func() {
			start := time.Now()
			n, err := prefetchFile(p)
			if err != nil {
				logs.Printf("compile", "prefetch of %s: %v", p, err)
				return
			}
			logs.Printf("compile", "prefetch of %s (%d MB) asked in %.1f ms", p, n>>20, float64(time.Since(start).Microseconds())/1000)
		}()
	}
}

// prefetched holds the paths Prefetch was asked for.
var prefetched sync.Map

// Resolve returns the file the dynamic loader would open for soname (a
// name without a slash), or "" when it finds none: the directories of
// $LD_LIBRARY_PATH, then those /etc/ld.so.conf lists (with its includes),
// then the system's. A path with a slash is returned as it is.
func Resolve(soname string) string {
	if strings.Contains(soname, "/") {
		return soname
	}
	for _, dir := range loaderDirs() {
		p := filepath.Join(dir, soname)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// loaderDirs returns the directories Resolve searches, in order, read
// once a process (but $LD_LIBRARY_PATH each time).
func loaderDirs() []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return append(dirs, confDirs()...)
}

// confDirs are the directories of /etc/ld.so.conf and the system's.
var confDirs = sync.OnceValue(func() []string {
	dirs := readConf("/etc/ld.so.conf", 0)
	return append(dirs, "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
})

// readConf returns the directories an ld.so.conf file lists, following
// its include lines (globs) to a depth of a few files.
func readConf(path string, depth int) []string {
	f, err := os.Open(path)
	if err != nil || depth > 4 {
		return nil
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "":
		case strings.HasPrefix(line, "include "):
			pat := strings.TrimSpace(strings.TrimPrefix(line, "include "))
			if !filepath.IsAbs(pat) {
				pat = filepath.Join(filepath.Dir(path), pat)
			}
			matches, _ := filepath.Glob(pat)
			for _, m := range matches {
				dirs = append(dirs, readConf(m, depth+1)...)
			}
		case strings.HasPrefix(line, "hwcap "):
		default:
			dirs = append(dirs, line)
		}
	}
	return dirs
}

// FirstFile returns the file the first of candidates (Candidates' order:
// paths, or sonames the loader resolves) that exists names, or "".
func FirstFile(candidates []string) string {
	for _, c := range candidates {
		if p := Resolve(c); p != "" {
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p
			}
		}
	}
	return ""
}

package procfs

import "bytes"

// ParseEnviron parses the NUL-separated KEY=VALUE entries of
// /proc/PID/environ. Entries without '=' or with an empty key are ignored;
// when a key occurs more than once the first occurrence wins, as it does for
// getenv(3). The result is never nil.
//
// /proc/PID/environ shows the environment the process was started with;
// later setenv calls in the process are not reflected.
func ParseEnviron(data []byte) map[string]string {
	env := make(map[string]string)
	for len(data) > 0 {
		var entry []byte
		if i := bytes.IndexByte(data, 0); i >= 0 {
			entry, data = data[:i], data[i+1:]
		} else {
			entry, data = data, nil
		}
		k, v, ok := bytes.Cut(entry, []byte{'='})
		if !ok || len(k) == 0 {
			continue
		}
		if _, dup := env[string(k)]; dup {
			continue
		}
		env[string(k)] = string(v)
	}
	return env
}

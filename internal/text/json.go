package text

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"unicode/utf8"
)

// EncodeJSON writes v to w as one indented JSON document in one write,
// HTML characters left as they are, and every character that does not
// print escaped as \uXXXX (see [EscapeJSON]), so that a document holding a
// job id or communicator name with a bidirectional override or a C1
// control can be shown on a terminal as it is and still decodes to the
// same strings.
func EncodeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(EscapeJSON(buf.Bytes()))
	return err
}

// EscapeJSON returns the JSON text b with every non-ASCII character that
// does not print (bidirectional overrides such as U+202E, C1 controls such
// as U+009B, format characters) written as a \uXXXX escape (a surrogate
// pair above U+FFFF). encoding/json escapes the ASCII controls and
// U+2028/U+2029 itself but leaves these as they are. Outside strings JSON
// text is ASCII, so only string contents change, and a decoder reads the
// same values. Text with nothing to escape comes back as it is.
func EscapeJSON(b []byte) []byte {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && !strconv.IsPrint(r) {
			break
		}
		i += size
	}
	if i == len(b) {
		return b
	}
	const hex = "0123456789abcdef"
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	u := func(c rune) {
		out = append(out, '\\', 'u', hex[c>>12&0xf], hex[c>>8&0xf], hex[c>>4&0xf], hex[c&0xf])
	}
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			out = append(out, b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError || strconv.IsPrint(r):
			out = append(out, b[i:i+size]...)
		case r > 0xffff:
			r -= 0x10000
			u(0xd800 + r>>10)
			u(0xdc00 + r&0x3ff)
		default:
			u(r)
		}
		i += size
	}
	return out
}

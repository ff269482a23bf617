package wire

import (
	"encoding/json"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// This file reads JSON documents in place, for the wire filters that work
// on response bytes before they are decoded (drop.go,
// cacheditems_json.go): a jsonScanner moves through members and values
// without decoding them, and cutRanges removes byte ranges found so.

// jsonScanner reads a JSON document, buf, from pos. Its errors wrap
// errMalformed.
type jsonScanner struct {
	buf []byte
	pos int
}

// next moves to the next member of an object or element of an array, past
// the comma unless first, and reports whether there is one: false once it
// has read the closing byte end, or with an error.
func (f *jsonScanner) next(end byte, first bool) (bool, error) {
	f.ws()
	if f.peek() == end {
		f.pos++
		return false, nil
	}
	if !first {
		if err := f.expect(','); err != nil {
			return false, err
		}
		f.ws()
	}
	return true, nil
}

// key reads a member name and returns it unescaped (sharing the input's
// bytes when it has no escapes).
func (f *jsonScanner) key() ([]byte, error) {
	start := f.pos
	escaped, err := f.skipString()
	if err != nil {
		return nil, err
	}
	raw := f.buf[start:f.pos]
	if !escaped {
		return raw[1 : len(raw)-1], nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%w JSON: member name at offset %d: %v", errMalformed, start, err)
	}
	return []byte(s), nil
}

// member reads a member name and the colon after it, up to its value.
func (s *jsonScanner) member() ([]byte, error) {
	key, err := s.key()
	if err != nil {
		return nil, err
	}
	s.ws()
	if err := s.expect(':'); err != nil {
		return nil, err
	}
	s.ws()
	return key, nil
}

// plainString reads a value. If it is a string without escapes, it
// returns the bytes between its quotes and true.
func (s *jsonScanner) plainString() ([]byte, bool, error) {
	if s.peek() != '"' {
		return nil, false, s.skip()
	}
	start := s.pos
	escaped, err := s.skipString()
	if err != nil || escaped {
		return nil, false, err
	}
	return s.buf[start+1 : s.pos-1], true, nil
}

// skipString reads a string and reports whether it has escapes.
func (f *jsonScanner) skipString() (escaped bool, err error) {
	if err := f.expect('"'); err != nil {
		return false, err
	}
	for f.pos < len(f.buf) {
		switch f.buf[f.pos] {
		case '\\':
			escaped = true
			f.pos += 2
			continue
		case '"':
			f.pos++
			return escaped, nil
		}
		f.pos++
	}
	return false, fmt.Errorf("%w JSON: unterminated string", errMalformed)
}

// skip reads a value of any kind, without recursion however deep it nests.
func (f *jsonScanner) skip() error {
	switch c := f.peek(); {
	case c == '"':
		_, err := f.skipString()
		return err
	case c == '{' || c == '[':
		depth := 0
		for f.pos < len(f.buf) {
			switch f.buf[f.pos] {
			case '"':
				if _, err := f.skipString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					f.pos++
					return nil
				}
			}
			f.pos++
		}
		return fmt.Errorf("%w JSON: unterminated object or array", errMalformed)
	default:
		start := f.pos
		for f.pos < len(f.buf) && isJSONLiteralByte(f.buf[f.pos]) {
			f.pos++
		}
		if f.pos == start {
			return fmt.Errorf("%w JSON: unexpected %s at offset %d", errMalformed, describeByte(f.buf, f.pos), f.pos)
		}
		return nil
	}
}

// isJSONLiteralByte tells whether b can be part of a number, true, false
// or null.
func isJSONLiteralByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b == '-' || b == '+' || b == '.' || b == 'E'
}

func (f *jsonScanner) ws() {
	for f.pos < len(f.buf) {
		switch f.buf[f.pos] {
		case ' ', '\t', '\n', '\r':
			f.pos++
		default:
			return
		}
	}
}

// peek returns the next byte, or 0 at the end.
func (f *jsonScanner) peek() byte {
	if f.pos < len(f.buf) {
		return f.buf[f.pos]
	}
	return 0
}

func (f *jsonScanner) expect(b byte) error {
	if f.peek() != b {
		return fmt.Errorf("%w JSON: want %q, got %s at offset %d", errMalformed, b, describeByte(f.buf, f.pos), f.pos)
	}
	f.pos++
	return nil
}

// describeByte names buf[pos] for an error message.
func describeByte(buf []byte, pos int) string {
	if pos >= len(buf) {
		return "the end"
	}
	return fmt.Sprintf("%q", buf[pos])
}

// cutRanges removes cuts, byte ranges [start, end) in order, from data, in
// place, and returns what is left, which shares data's bytes.
func cutRanges(data []byte, cuts [][2]int) []byte {
	if len(cuts) == 0 {
		return data
	}
	w := cuts[0][0]
	for i, cut := range cuts {
		next := len(data)
		if i+1 < len(cuts) {
			next = cuts[i+1][0]
		}
		w += copy(data[w:], data[cut[1]:next])
	}
	return data[:w]
}

// appendUnquoted appends to out the value of quoted, a JSON string with its
// quotes, as encoding/json (and so sigs.k8s.io/json) decodes it, and
// reports false where encoding/json would reject the string (an unknown
// escape, a \u without four hex digits, a control byte, no closing quote).
// Its rules, which a decoded value must follow to equal client-go's:
//   - a \u escape of a high surrogate followed by a \u escape of a low one
//     is their pair's code point; any other surrogate escape is U+FFFD,
//     and an escape after it is read on its own;
//   - a byte that does not start valid UTF-8 (surrogates encoded in UTF-8
//     included) is U+FFFD, and the next byte is read on its own.
//
// Decoders call it only for strings with escapes or bytes of 0x80 or more
// (a plain string is its bytes), so it is written for clarity over speed.
func appendUnquoted(out, quoted []byte) ([]byte, bool) {
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		return out, false
	}
	s := quoted[1 : len(quoted)-1]
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return out, false
			}
			switch s[i+1] {
			case '"', '\\', '/':
				out = append(out, s[i+1])
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(s[i+2:])
				if !ok {
					return out, false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					// A pair only if a valid low surrogate's escape follows.
					if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if r2, ok := hex4(s[i+2:]); ok {
							if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
								out = utf8.AppendRune(out, pair)
								i += 6
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return out, false
			}
			i += 2
		case c == '"' || c < 0x20:
			return out, false
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, s[i:i+size]...)
			}
			i += size
		}
	}
	return out, true
}

// hex4 reads the four hex digits of a \u escape at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

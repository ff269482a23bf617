package wire

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kjson "sigs.k8s.io/json"
)

// unquoteCases are JSON strings, quotes included, whose decoding has rules
// of its own: escapes, surrogate pairs and lone surrogates, invalid UTF-8,
// and malformed escapes.
var unquoteCases = []string{
	`""`, `"plain"`, `"a\"b\\c\/d\be\ff\ng\rh\ti"`, `"\u00e9\u4e16"`, `"é世界"`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ude00\ud83d"`, `"\ud83d\ud83d\ude00"`,
	`"\uDBFF\uDFFF"`, `"\ud800\\u"`, "\"\xff\"", "\"a\xed\xa0\x80b\"", "\"\xe4\xb8\"", "\"\xf0\x9f\x98\x80\"",
	`"\x"`, `"\u12"`, `"\u12g4"`, `"\"`, "\"a\x01\"", `"a"b"`, `"`, `x`, `"{\"apiVersion\":\"apps/v1\"}"`,
}

// checkUnquote compares appendUnquoted with sigs.k8s.io/json's decoding of
// quoted into a string: the same value, or both fail.
func checkUnquote(t *testing.T, quoted string) {
	t.Helper()
	var want string
	wantErr := kjson.UnmarshalCaseSensitivePreserveInts([]byte(quoted), &want)
	got, ok := appendUnquoted([]byte("prefix"), []byte(quoted))
	if ok != (wantErr == nil) {
		t.Fatalf("unquoting %q: ok %v, sigs.k8s.io/json's error %v", quoted, ok, wantErr)
	}
	if ok {
		if diff := cmp.Diff("prefix"+want, string(got)); diff != "" {
			t.Fatalf("unquoting %q (-sigs.k8s.io/json +appendUnquoted):\n%s", quoted, diff)
		}
	}
}

func TestAppendUnquoted(t *testing.T) {
	for _, quoted := range unquoteCases {
		checkUnquote(t, quoted)
	}
}

func FuzzAppendUnquoted(f *testing.F) {
	for _, quoted := range unquoteCases {
		f.Add(quoted)
	}
	f.Fuzz(func(t *testing.T, quoted string) {
		if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
			return // not one string token (white space around it, another value)
		}
		checkUnquote(t, quoted)
	})
}

// TestPlainPrefix compares plainPrefix with a byte loop: it finds the
// first byte that ends a plain string, whatever the bytes around it, if
// that byte is in a whole word.
func TestPlainPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	special := []byte{'"', '\\', 0, 0x1f, 0x20, 0x21, 0x7f, 0x80, 0xa0, 0xff, 'a', '#', ']', '[', '\\' + 1, '"' - 1}
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			if r.IntN(4) == 0 {
				b[i] = special[r.IntN(len(special))]
			} else {
				b[i] = byte(0x20 + r.IntN(0x60))
			}
		}
		end := len(b)
		for i, c := range b {
			if c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
				end = i
				break
			}
		}
		if got, want := plainPrefix(b), min(end, len(b)/8*8); got != want {
			t.Fatalf("plainPrefix(%q) = %d, want %d", b, got, want)
		}
	}
}

// TestCountElements checks the element counts the typed decoder sizes
// arrays by: commas in strings (escaped quotes included) and nested values
// do not count, and an array longer than countWindow gets 0.
func TestCountElements(t *testing.T) {
	long := "[" + strings.Repeat(`"x",`, countWindow/4) + `"x"]`
	cases := map[string]int{
		`[1]`:                       1,
		`[1,2,3]`:                   3,
		`[{"a":[1,2],"b":"c,d"},2]`: 2,
		`["a\",b",["c","d"]]`:       2,
		`["a\\",["c","d"]]`:         2,
		`[[[],{}],[],{"x":"]"}]`:    3,
		long:                        0,
		`[1,2`:                      0,
	}
	got := map[string]int{}
	for array := range cases {
		got[array] = countElements([]byte(array), 1)
	}
	if diff := cmp.Diff(cases, got); diff != "" {
		t.Errorf("countElements (-want +got):\n%s", diff)
	}
}

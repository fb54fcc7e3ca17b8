package authz

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// RFC 8785 vectors: the examples of sections 3.2.2 and 3.2.3 and numbers
// from Appendix B, written here from the RFC.
func TestCanonicalizeRFC8785(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"Section3_2_2Example",
			`{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		{"Section3_2_3SortByUTF16CodeUnits",
			`{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"NestedSortArraysKeepOrder", `{"b":[3,1,{"z":1,"a":2}],"a":{"y":null,"x":true}}`, `{"a":{"x":true,"y":null},"b":[3,1,{"a":2,"z":1}]}`},
		{"Zero", `0`, `0`},
		{"MinusZero", `-0`, `0`},
		{"MinusZeroFraction", `-0.0e5`, `0`},
		{"SmallestDenormal", `5e-324`, `5e-324`},
		{"LargestDouble", `1.7976931348623157e308`, `1.7976931348623157e+308`},
		{"MaxSafeInteger", `9007199254740992`, `9007199254740992`},
		{"MinSafeInteger", `-9007199254740992`, `-9007199254740992`},
		{"TwoPow68", `295147905179352825856`, `295147905179352830000`},
		{"1e21", `1e21`, `1e+21`},
		{"JustBelow1e21", `999999999999999900000`, `999999999999999900000`},
		{"1e23", `1e23`, `1e+23`},
		{"1e30", `1e30`, `1e+30`},
		{"Micro", `0.000001`, `0.000001`},
		{"BelowMicro", `1e-7`, `1e-7`},
		{"FourFifty", `4.50`, `4.5`},
		{"Third", `333333333.3333332`, `333333333.3333332`},
		{"ExponentForms", `[1E+2,1e-0,10e-1,0.1e1]`, `[100,1,1,1]`},
		{"ControlEscapesLowerHex", `"\u001F\u0008\u0009\u000C"`, `"\u001f\b\t\f"`},
		{"NonASCIIUnescaped", `"\u00e9\u2028\ud83d\ude00"`, "\"é\u2028😀\""},
		{"SolidusNotEscaped", `"a\/b"`, `"a/b"`},
		{"DelNotEscaped", `"\u007f"`, "\"\x7f\""},
		{"WhitespaceDropped", " \t\n{ \"a\" : [ 1 , 2 ] }\r\n", `{"a":[1,2]}`},
		{"Literals", `[true,false,null]`, `[true,false,null]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(c.in))
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if string(got) != c.want {
				t.Fatalf("Canonicalize(%s)\n got %s\nwant %s", c.in, got, c.want)
			}
		})
	}
}

// The RFC gives the UTF-8 bytes of the section 3.2.2 example in hex.
func TestCanonicalizeRFC8785Bytes(t *testing.T) {
	const wantHex = "7b226c69746572616c73223a5b6e756c6c2c747275652c66616c73655d2c226e" +
		"756d62657273223a5b3333333333333333332e333333333333332c31652b3330" +
		"2c342e352c302e3030322c31652d32375d2c22737472696e67223a22e282ac24" +
		"5c75303030665c6e4127425c225c5c5c5c5c222f227d"
	in := `{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`
	got, err := Canonicalize([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != wantHex {
		t.Fatalf("bytes\n got %x\nwant %s", got, wantHex)
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	cases := []struct{ name, in string }{
		{"Empty", ``},
		{"TrailingGarbage", `{"a":1} x`},
		{"TrailingComma", `[1,]`},
		{"SingleQuotes", `{'a':1}`},
		{"NaN", `NaN`},
		{"Infinity", `[Infinity]`},
		{"LeadingZero", `01`},
		{"DuplicateKey", `{"a":1,"a":2}`},
		{"LoneHighSurrogate", `"\ud800"`},
		{"LoneLowSurrogate", `"\udc00"`},
		{"SwappedSurrogates", `"\udc00\ud800"`},
		{"InvalidUTF8", "\"\xff\""},
		{"NumberOutOfRange", `1e400`},
		{"UnescapedControl", "\"a\nb\""},
		{"Comment", `{"a":1 /* c */}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if out, err := Canonicalize([]byte(c.in)); err == nil {
				t.Fatalf("Canonicalize(%q) = %q, want error", c.in, out)
			}
		})
	}
}

func TestPayloadHash(t *testing.T) {
	const want = "d7c5f475676b8bf1e4f6b016b69b5ebb146297cfa4846eb838342ad2664f5d6e" // sha256sum of the canonical text below
	const wantCanon = `{"args":{"cmd":"ls -l","n":1},"tool":"shell"}`
	type args struct {
		N   float64 `json:"n"`
		Cmd string  `json:"cmd"`
	}
	same := []struct {
		name string
		args any
	}{
		{"Map", map[string]any{"cmd": "ls -l", "n": 1}},
		{"MapFloat", map[string]any{"n": 1.0, "cmd": "ls -l"}},
		{"Struct", args{N: 1, Cmd: "ls -l"}},
		{"RawJSON", json.RawMessage(`{ "n" : 1.00, "cmd" : "ls -l" }`)},
		{"JSONNumber", map[string]any{"cmd": "ls -l", "n": json.Number("1e0")}},
	}
	for _, c := range same {
		t.Run("Same/"+c.name, func(t *testing.T) {
			h, canon, err := PayloadHash("shell", c.args)
			if err != nil {
				t.Fatal(err)
			}
			if h != want || string(canon) != wantCanon {
				t.Fatalf("PayloadHash = %s %s, want %s %s", h, canon, want, wantCanon)
			}
		})
	}
	t.Run("NilArgsAreEmptyObject", func(t *testing.T) {
		var nilMap map[string]any
		for _, a := range []any{nil, nilMap, map[string]any{}} {
			h, canon, err := PayloadHash("shell", a)
			if err != nil || string(canon) != `{"args":{},"tool":"shell"}` ||
				h != "fe7dff374d8e9701babff4d002c1b232dad47ab07db781bc88d87cdefc8dfb41" {
				t.Fatalf("PayloadHash(%#v) = %s %s %v", a, h, canon, err)
			}
		}
	})
	differ := []struct {
		name string
		tool string
		args any
	}{
		{"OtherTool", "Shell", map[string]any{"cmd": "ls -l", "n": 1}},
		{"OtherCommand", "shell", map[string]any{"cmd": "ls -la", "n": 1}},
		{"OtherNumber", "shell", map[string]any{"cmd": "ls -l", "n": 2}},
		{"NumberAsString", "shell", map[string]any{"cmd": "ls -l", "n": "1"}},
		{"ExtraKey", "shell", map[string]any{"cmd": "ls -l", "n": 1, "x": nil}},
	}
	for _, c := range differ {
		t.Run("Differs/"+c.name, func(t *testing.T) {
			h, _, err := PayloadHash(c.tool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if h == want {
				t.Fatalf("%s hashes like the original call", c.name)
			}
		})
	}
	t.Run("HTMLCharactersStayRaw", func(t *testing.T) {
		_, canon, err := PayloadHash("shell", map[string]string{"cmd": "a && b > c <d>"})
		if err != nil || !strings.Contains(string(canon), `"a && b > c <d>"`) {
			t.Fatalf("canonical %s, %v", canon, err)
		}
	})
	rejects := []struct {
		name string
		tool string
		args any
	}{
		{"IntegerBeyondDouble", "t", json.RawMessage(`{"id":9007199254740993}`)},
		{"JSONNumberBeyondDouble", "t", map[string]any{"id": json.Number("12345678901234567890123")}},
		{"TooManyDigits", "t", json.RawMessage(`[0.10000000000000000001]`)},
		{"Int64BeyondDouble", "t", map[string]int64{"id": 1<<62 + 1}},
		{"InvalidUTF8Value", "t", map[string]string{"path": "a\xffb"}},
		{"InvalidUTF8Key", "t", map[string]int{"a\xff": 1}},
		{"InvalidUTF8Tool", "t\xff", nil},
		{"Unmarshalable", "t", map[string]any{"f": func() {}}},
		{"BadRawJSON", "t", json.RawMessage(`{"a":}`)},
	}
	for _, c := range rejects {
		t.Run("Rejects/"+c.name, func(t *testing.T) {
			if h, canon, err := PayloadHash(c.tool, c.args); err == nil {
				t.Fatalf("PayloadHash = %s %s, want error", h, canon)
			}
		})
	}
	t.Run("AcceptsFloatsAndEscapedReplacementChar", func(t *testing.T) {
		// A real U+FFFD (valid UTF-8) and a backslash before "ufffd" are fine.
		args := map[string]any{"f": 0.1, "g": 1e300, "s": "\ufffd", "t": `\ufffd`, "big": 1 << 53}
		if _, _, err := PayloadHash("t", args); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDecimalForm(t *testing.T) {
	cases := map[string]string{
		"0": "0", "-0": "0", "0.000": "0", "4.50": "45e-1", "-4.5": "-45e-1", "1E30": "1e30",
		"100": "1e2", "0.001": "1e-3", "1.5e+3": "15e2", "000123.4500e-2": "12345e-4",
	}
	for in, want := range cases {
		if got, ok := decimalForm(in); !ok || got != want {
			t.Errorf("decimalForm(%q) = %q, %v, want %q", in, got, ok, want)
		}
	}
}

package wire

import "testing"

// Decode is the strict reading every message from a peer gets.
func TestDecode(t *testing.T) {
	cases := []struct {
		name, data string
		ok         bool
	}{
		{"OK", `{"steerId":"s1","status":"queued"}`, true},
		{"OKTrailingSpace", "{\"steerId\":\"s1\"} \n\t", true},
		{"TrailingObject", `{"steerId":"s1"} {}`, false},
		{"TrailingBrace", `{"steerId":"s1"}}`, false},
		{"TrailingBracket", `{"steerId":"s1"}]`, false},
		{"TrailingGarbage", `{"steerId":"s1"}x`, false},
		{"TrailingNull", `{"steerId":"s1"} null`, false},
		{"UnknownField", `{"steerId":"s1","sql":"drop"}`, false},
		{"WrongType", `{"steerId":1}`, false},
		{"NotAnObject", `["s1"]`, false},
		{"Truncated", `{"steerId":"s1"`, false},
		{"Empty", ``, false},
		{"InvalidUTF8InString", "{\"steerId\":\"s1\",\"detail\":\"\xff\"}", false},
		{"InvalidUTF8Outside", "{\"steerId\":\"s1\"}\xff", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r Receipt
			if err := Decode([]byte(c.data), &r); (err == nil) != c.ok {
				t.Fatalf("Decode(%q) = %v, want ok=%v", c.data, err, c.ok)
			}
		})
	}
}

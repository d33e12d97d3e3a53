package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxDepth is the nesting of arrays and objects encoding/json takes; the
// room of a whole text (see Skip).
const MaxDepth = 10000

// ErrDepth is returned when a value nests deeper than its room allows.
var ErrDepth = errors.New("jsonscan: exceeded max depth")

// SyntaxError says where a text stops being valid JSON. An Offset at the
// end of the text says the text is cut short: more of it might have made
// it valid.
type SyntaxError struct {
	Offset int
	msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.Offset, e.msg)
}

func syntaxErr(data []byte, i int, want string) error {
	if i >= len(data) {
		return &SyntaxError{Offset: len(data), msg: "unexpected end of input, want " + want}
	}
	return &SyntaxError{Offset: i, msg: fmt.Sprintf("unexpected %q, want %s", data[i], want)}
}

// Space returns the index of the first byte at or after i that is not
// JSON white space.
func Space(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// String checks the string literal starting at data[i] (a quote) and
// returns the index just after its closing quote. plain reports that its
// bytes between the quotes are the string itself: no escapes, and valid
// UTF-8 (encoding/json replaces invalid bytes).
func String(data []byte, i int) (end int, plain bool, err error) {
	escaped, ascii := false, true
	for j := i + 1; j < len(data); {
		c := data[j]
		if !stringSpecial[c] {
			j++
			continue
		}
		switch {
		case c == '"':
			return j + 1, !escaped && (ascii || utf8.Valid(data[i:j+1])), nil
		case c == '\\':
			escaped = true
			if j, err = escape(data, j); err != nil {
				return 0, false, err
			}
			continue
		case c < 0x20:
			return 0, false, syntaxErr(data, j, "a string character")
		default: // c >= utf8.RuneSelf
			ascii = false
		}
		j++
	}
	return 0, false, syntaxErr(data, len(data), "the end of a string")
}

// stringSpecial marks the bytes String looks at: the quote, the
// backslash, control characters and bytes beyond ASCII.
var stringSpecial = func() (t [256]bool) {
	for c := range t {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf
	}
	return t
}()

// escape checks the escape sequence at data[j] (a backslash): one of the
// quote, backslash, slash, b, f, n, r and t, or u and four hex digits. It
// returns the index just after it.
func escape(data []byte, j int) (int, error) {
	if j+1 >= len(data) {
		return 0, syntaxErr(data, j+1, "an escape")
	}
	switch data[j+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return j + 2, nil
	case 'u':
		for k := j + 2; k < j+6; k++ {
			if k >= len(data) || !isHex(data[k]) {
				return 0, syntaxErr(data, k, "a hex digit")
			}
		}
		return j + 6, nil
	}
	return 0, syntaxErr(data, j+1, "an escape")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// digits returns the index of the first byte at or after j that is not a
// decimal digit.
func digits(data []byte, j int) int {
	for j < len(data) && '0' <= data[j] && data[j] <= '9' {
		j++
	}
	return j
}

// Number checks the number literal starting at data[i] (a minus sign or
// a digit) as JSON's grammar spells it, and returns the index just after
// it.
func Number(data []byte, i int) (int, error) {
	j := i
	if j < len(data) && data[j] == '-' {
		j++
	}
	switch {
	case j < len(data) && data[j] == '0':
		j++
	case j < len(data) && '1' <= data[j] && data[j] <= '9':
		j = digits(data, j+1)
	default:
		return 0, syntaxErr(data, j, "a digit")
	}
	if j < len(data) && data[j] == '.' {
		k := digits(data, j+1)
		if k == j+1 {
			return 0, syntaxErr(data, k, "a digit")
		}
		j = k
	}
	if j < len(data) && (data[j] == 'e' || data[j] == 'E') {
		j++
		if j < len(data) && (data[j] == '+' || data[j] == '-') {
			j++
		}
		k := digits(data, j)
		if k == j {
			return 0, syntaxErr(data, k, "a digit")
		}
		j = k
	}
	return j, nil
}

// Literal checks that lit (true, false or null) is at data[i] and returns
// the index just after it. A text that ends inside lit is cut short: the
// error is at its end.
func Literal(data []byte, i int, lit string) (int, error) {
	if len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit {
		return i + len(lit), nil
	}
	if bytes.HasPrefix([]byte(lit), data[i:]) {
		return 0, syntaxErr(data, len(data), lit)
	}
	return 0, syntaxErr(data, i, lit)
}

// Skip checks the value starting at data[i] (no white space before it)
// and returns the index just after it. room is how many arrays and
// objects the value may nest, itself included: MaxDepth for a whole text,
// one less for each array or object around the value.
func Skip(data []byte, i, room int) (int, error) {
	w := walker{data: data}
	return w.value(i, room)
}

// SkipSpaced is Skip that also reports whether white space is inside the
// value: a value without any is written as encoding/json would write it.
func SkipSpaced(data []byte, i, room int) (end int, spaced bool, err error) {
	w := walker{data: data}
	end, err = w.value(i, room)
	return end, w.spaced, err
}

// MemberFunc is called by Object for each member of an object with its
// key (the string literal, quotes included), the start of its value and
// the room of the value (see Skip). It checks the value (Skip when it has
// no use for it) and returns the index just after it.
type MemberFunc func(key []byte, start, room int) (end int, err error)

// Object checks the object starting at data[i] (a brace), with member
// checking each member's value, and returns the index just after it.
func Object(data []byte, i, room int, member MemberFunc) (int, error) {
	w := walker{data: data}
	return w.object(i, room, member)
}

// ItemFunc is called by Array for each item of an array with the start of
// the item and its room (see Skip). It checks the item and returns the
// index just after it.
type ItemFunc func(start, room int) (end int, err error)

// Array checks the array starting at data[i] (a bracket), with item
// checking each item, and returns the index just after it.
func Array(data []byte, i, room int, item ItemFunc) (int, error) {
	w := walker{data: data}
	return w.array(i, room, item)
}

// Valid checks that data is one JSON value, with nothing but white space
// around it, as encoding/json.Valid does.
func Valid(data []byte) error {
	i := Space(data, 0)
	end, err := Skip(data, i, MaxDepth)
	if err != nil {
		return err
	}
	return atEnd(data, end)
}

// TopObject checks that data is one JSON object, with nothing but white
// space around it, with member checking each of its members' values.
func TopObject(data []byte, member MemberFunc) error {
	i := Space(data, 0)
	if i >= len(data) || data[i] != '{' {
		return syntaxErr(data, i, "a JSON object")
	}
	end, err := Object(data, i, MaxDepth, member)
	if err != nil {
		return err
	}
	return atEnd(data, end)
}

func atEnd(data []byte, end int) error {
	if j := Space(data, end); j != len(data) {
		return syntaxErr(data, j, "the end of the input")
	}
	return nil
}

// walker checks the values Skip, Object and Array pass over, and
// remembers whether they hold white space.
type walker struct {
	data   []byte
	spaced bool
}

// space is Space, most often at a byte that is not white space.
func (w *walker) space(i int) int {
	if i < len(w.data) && w.data[i] > ' ' {
		return i
	}
	j := Space(w.data, i)
	w.spaced = w.spaced || j != i
	return j
}

func (w *walker) value(i, room int) (int, error) {
	data := w.data
	if i >= len(data) {
		return 0, syntaxErr(data, i, "a value")
	}
	switch c := data[i]; {
	case c == '{':
		return w.object(i, room, nil)
	case c == '[':
		return w.array(i, room, nil)
	case c == '"':
		end, _, err := String(data, i)
		return end, err
	case c == '-' || '0' <= c && c <= '9':
		return Number(data, i)
	case c == 't':
		return Literal(data, i, "true")
	case c == 'f':
		return Literal(data, i, "false")
	case c == 'n':
		return Literal(data, i, "null")
	}
	return 0, syntaxErr(data, i, "a value")
}

// object checks the object at data[i] ('{'), with member, when not nil,
// checking each member's value.
func (w *walker) object(i, room int, member MemberFunc) (int, error) {
	if room <= 0 {
		return 0, ErrDepth
	}
	data := w.data
	j := w.space(i + 1)
	if j < len(data) && data[j] == '}' {
		return j + 1, nil
	}
	for {
		if j >= len(data) || data[j] != '"' {
			return 0, syntaxErr(data, j, "a key")
		}
		keyEnd, _, err := String(data, j)
		if err != nil {
			return 0, err
		}
		key := data[j:keyEnd]
		j = w.space(keyEnd)
		if j >= len(data) || data[j] != ':' {
			return 0, syntaxErr(data, j, "':'")
		}
		j = w.space(j + 1)
		var end int
		if member != nil {
			end, err = member(key, j, room-1)
		} else {
			end, err = w.value(j, room-1)
		}
		if err != nil {
			return 0, err
		}
		j = w.space(end)
		if j >= len(data) {
			return 0, syntaxErr(data, j, "',' or '}'")
		}
		switch data[j] {
		case ',':
			j = w.space(j + 1)
		case '}':
			return j + 1, nil
		default:
			return 0, syntaxErr(data, j, "',' or '}'")
		}
	}
}

// array checks the array at data[i] ('['), with item, when not nil,
// checking each item.
func (w *walker) array(i, room int, item ItemFunc) (int, error) {
	if room <= 0 {
		return 0, ErrDepth
	}
	data := w.data
	j := w.space(i + 1)
	if j < len(data) && data[j] == ']' {
		return j + 1, nil
	}
	for {
		var end int
		var err error
		if item != nil {
			end, err = item(j, room-1)
		} else {
			end, err = w.value(j, room-1)
		}
		if err != nil {
			return 0, err
		}
		j = w.space(end)
		if j >= len(data) {
			return 0, syntaxErr(data, j, "',' or ']'")
		}
		switch data[j] {
		case ',':
			j = w.space(j + 1)
		case ']':
			return j + 1, nil
		default:
			return 0, syntaxErr(data, j, "',' or ']'")
		}
	}
}

// SkipChecked returns the index just after the value starting at data[i]
// in a text already checked (by Skip or encoding/json): it matches
// brackets and finds the ends of strings, and checks nothing else. ok is
// false when brackets or a string do not close.
func SkipChecked(data []byte, i int) (end int, ok bool) {
	switch data[i] {
	case '"':
		end = stringEnd(data, i)
		return end, end >= 0
	case '{', '[':
		depth := 0
		for j := i; j < len(data); {
			c := data[j]
			if !structural[c] {
				j++
				continue
			}
			switch c {
			case '"':
				if j = stringEnd(data, j); j < 0 {
					return 0, false
				}
				continue
			case '{', '[':
				depth++
			default: // '}', ']'
				depth--
			}
			j++
			if depth == 0 {
				return j, true
			}
		}
		return 0, false
	}
	// A number or a literal.
	j := i
	for j < len(data) && !structural[data[j]] && data[j] > ' ' && data[j] != ',' {
		j++
	}
	return j, true
}

// structural marks the bytes SkipChecked looks for in an array or object.
var structural = func() (t [256]bool) {
	for _, c := range `"{}[]` {
		t[c] = true
	}
	return t
}()

// stringEnd returns the index just after the string literal at data[i],
// -1 when it does not end.
func stringEnd(data []byte, i int) int {
	for j := i + 1; ; {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			return -1
		}
		j += q
		backslashes := 0
		for k := j - 1; k > i && data[k] == '\\'; k-- {
			backslashes++
		}
		j++
		if backslashes%2 == 0 {
			return j
		}
	}
}

// Unquote returns the value of a string literal String accepted (quotes
// included), as encoding/json decodes it.
func Unquote(lit []byte) string {
	if bytes.IndexByte(lit, '\\') < 0 && utf8.Valid(lit) {
		return string(lit[1 : len(lit)-1])
	}
	var s string
	_ = json.Unmarshal(lit, &s) // String checked it: it unquotes
	return s
}

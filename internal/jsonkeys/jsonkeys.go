// Package jsonkeys finds a key given twice in one JSON object. encoding/json accepts such input
// and keeps the last value silently (RFC 8259 sec. 4 only says names "SHOULD be unique" and that
// implementations differ on the behaviour), so a file that sets a figure twice would be read with
// the second value and no word; the hardware and model decoders refuse it with this package.
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Dup is a key given twice: the object's path ("device.peak_flops", "levels[1]"; "" for the top
// level), the key, and the 1-based line and column of the end of its second occurrence.
type Dup struct {
	Path, Key string
	Line, Col int
}

// Where is the key's full path, "device.peak_flops.bf16", as the decoders' messages name fields.
func (d Dup) Where() string {
	if d.Path == "" {
		return d.Key
	}
	return d.Path + "." + d.Key
}

// frame is one open object or array.
type frame struct {
	path   string
	object bool
	keys   map[string]bool
	key    bool   // the next string token in an object is a key
	last   string // the key whose value is being read
	index  int    // arrays: the next element's index
}

// child is the path of the value about to be read in f.
func (f *frame) child() string {
	if f.object {
		if f.path == "" {
			return f.last
		}
		return f.path + "." + f.last
	}
	return f.path + "[" + strconv.Itoa(f.index) + "]"
}

// Find returns the first key given twice in one object of data, and true; false when there is
// none, or when data stops being valid JSON before one (callers decode first, so that a syntax
// error is reported as such).
func Find(data []byte) (Dup, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	// value records that a value was read in the innermost frame.
	value := func() {
		if n := len(stack); n > 0 {
			f := stack[n-1]
			if f.object {
				f.key = true
			} else {
				f.index++
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return Dup{}, false
		}
		var top *frame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				path := ""
				if top != nil {
					path = top.child()
				}
				stack = append(stack, &frame{path: path, object: t == '{', keys: map[string]bool{}, key: true})
				continue
			default: // '}' or ']'
				stack = stack[:len(stack)-1]
				value()
			}
		case string:
			if top != nil && top.object && top.key {
				if top.keys[t] {
					line, col := position(data, dec.InputOffset())
					return Dup{Path: top.path, Key: t, Line: line, Col: col}, true
				}
				top.keys[t], top.last, top.key = true, t, false
				continue
			}
			value()
		default:
			value()
		}
		if len(stack) == 0 {
			return Dup{}, false
		}
	}
}

// position is the 1-based line and column (in characters) of the byte just before offset off:
// a key's closing quote.
func position(data []byte, off int64) (line, col int) {
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte{'\n'})
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:])
	return line, max(col, 1)
}

package inspect

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxValueDepth is how deeply a payload's arrays and objects may nest for
// the inspector to decode it. A deeper value costs a stack frame or more
// per level to decode, and its indented text grows with the square of its
// depth; no value a program means to send nests this deep.
const maxValueDepth = 1000

// errTooDeep is why a payload nested deeper than maxValueDepth is not
// decoded.
var errTooDeep = fmt.Errorf("nested more than %d levels deep", maxValueDepth)

// errPastEnd: a length in a msgpack payload claims more than the bytes
// present.
var errPastEnd = errors.New("a length claims more bytes than the payload holds")

// walkMsgpack walks the one msgpack value at the start of p, without
// decoding it and without recursion, and returns where it ends. It fails
// when an array or map nests deeper than maxValueDepth, when a length
// claims more than the bytes present (msgpack makes a slice of the length
// an array header claims before reading its elements: 2^32-1 from 5
// corrupt bytes, a fatal out of memory; see codec.Msgpack), and on a byte
// that starts no value.
func walkMsgpack(p []byte) (end int, err error) {
	// open[i] is how many values the i-th open array or map still holds
	// (a map holds two per entry); open[0] is the top level's one value.
	open := make([]uint64, 1, 16)
	open[0] = 1
	i := 0
	for len(open) > 0 {
		top := len(open) - 1
		if open[top] == 0 {
			open = open[:top]
			continue
		}
		open[top]--
		if i >= len(p) {
			return 0, errPastEnd
		}
		c := p[i]
		i++
		skip, elems, err := msgpackHead(c, p[i:])
		if err != nil {
			return 0, err
		}
		if skip > uint64(len(p)-i) {
			return 0, errPastEnd
		}
		i += int(skip)
		if elems < 0 {
			continue // not an array or a map
		}
		if len(open) > maxValueDepth {
			return 0, errTooDeep
		}
		if uint64(elems) > uint64(len(p)-i) { // each value takes a byte at least
			return 0, errPastEnd
		}
		open = append(open, uint64(elems))
	}
	return i, nil
}

// msgpackHead reads the head of a msgpack value whose first byte is c and
// whose next bytes are rest: how many bytes of rest belong to it, and for
// an array or a map how many values it holds (-1 otherwise).
func msgpackHead(c byte, rest []byte) (skip uint64, elems int64, err error) {
	length := func(n int) (uint64, error) {
		if len(rest) < n {
			return 0, errPastEnd
		}
		switch n {
		case 1:
			return uint64(rest[0]), nil
		case 2:
			return uint64(binary.BigEndian.Uint16(rest)), nil
		default:
			return uint64(binary.BigEndian.Uint32(rest)), nil
		}
	}
	elems = -1
	switch {
	case c <= 0x7f, c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3: // fixint, nil, false, true
	case c <= 0x8f: // fixmap
		elems = 2 * int64(c&0x0f)
	case c <= 0x9f: // fixarray
		elems = int64(c & 0x0f)
	case c <= 0xbf: // fixstr
		skip = uint64(c & 0x1f)
	case c == 0xc4, c == 0xd9: // bin 8, str 8
		skip, err = length(1)
		skip++
	case c == 0xc5, c == 0xda: // bin 16, str 16
		skip, err = length(2)
		skip += 2
	case c == 0xc6, c == 0xdb: // bin 32, str 32
		skip, err = length(4)
		skip += 4
	case c == 0xc7: // ext 8: length, type, data
		skip, err = length(1)
		skip += 2
	case c == 0xc8: // ext 16
		skip, err = length(2)
		skip += 3
	case c == 0xc9: // ext 32
		skip, err = length(4)
		skip += 5
	case c == 0xca, c == 0xce, c == 0xd2: // float 32, uint 32, int 32
		skip = 4
	case c == 0xcb, c == 0xcf, c == 0xd3: // float 64, uint 64, int 64
		skip = 8
	case c == 0xcc, c == 0xd0: // uint 8, int 8
		skip = 1
	case c == 0xcd, c == 0xd1: // uint 16, int 16
		skip = 2
	case c >= 0xd4 && c <= 0xd8: // fixext 1, 2, 4, 8, 16: type, data
		skip = 1 + 1<<(c-0xd4)
	case c == 0xdc, c == 0xde: // array 16, map 16
		var n uint64
		n, err = length(2)
		skip, elems = 2, int64(n)
	case c == 0xdd, c == 0xdf: // array 32, map 32
		var n uint64
		n, err = length(4)
		skip, elems = 4, int64(n)
	default: // 0xc1, never used
		return 0, 0, fmt.Errorf("invalid code %#x", c)
	}
	if c == 0xde || c == 0xdf {
		elems *= 2
	}
	return skip, elems, err
}

// checkJSONDepth fails when the arrays and objects of the JSON text p nest
// deeper than maxValueDepth (encoding/json allows 10,000 levels).
func checkJSONDepth(p []byte) error {
	depth := 0
	inString, escaped := false, false
	for _, c := range p {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[', c == '{':
			if depth++; depth > maxValueDepth {
				return errTooDeep
			}
		case c == ']', c == '}':
			depth--
		}
	}
	return nil
}

package wire

import (
	"errors"
	"fmt"
	"io"
)

// The protobuf wire reading of the generated decoder
// (decode_gen.go), with the rules of the gogo-generated Unmarshal
// methods of k8s.io/api, so that the decoder accepts and rejects exactly
// what they do: a varint of more than 10 bytes overflows (its 10th byte's
// extra bits are dropped, not rejected), a field number is the tag's bits
// above the wire type truncated to int32, a length is a varint converted
// to int, and unknown fields are skipped as gogo's skipGenerated skips
// them (groups by depth, without matching their field numbers).

var (
	errPBOverflow      = errors.New("integer overflow")
	errPBLength        = errors.New("negative length")
	errPBEndOfGroup    = errors.New("unexpected end of group")
	errPBWireTypeValue = errors.New("illegal wire type")
)

// pbVarint reads the varint at data[i:] and returns it and the index
// after it. (Too large to inline: the generated code reads one-byte
// varints itself, and calls the functions here for the rest.)
func pbVarint(data []byte, i int) (uint64, int, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if i >= len(data) {
			return 0, i, io.ErrUnexpectedEOF
		}
		b := data[i]
		i++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, i, nil
		}
	}
	return 0, i, errPBOverflow
}

// pbTag reads the tag at data[i:] of a field of the message msg and
// returns its field number, its wire type and the index after it. It
// rejects an end-group tag and a field number below 1.
func pbTag(data []byte, i int, msg string) (int32, int, int, error) {
	wire, next, err := pbVarint(data, i)
	if err != nil {
		return 0, 0, next, fmt.Errorf("%s: %w", msg, err)
	}
	num, typ := int32(wire>>3), int(wire&7)
	if typ == 4 {
		return 0, 0, next, fmt.Errorf("%s: end-group wire type outside a group", msg)
	}
	if num <= 0 {
		return 0, 0, next, fmt.Errorf("%s: illegal tag %d (wire type %d)", msg, num, typ)
	}
	return num, typ, next, nil
}

// pbLen reads the length at data[i:] of a length-delimited value and
// returns the value's bounds in data.
func pbLen(data []byte, i int) (int, int, error) {
	v, start, err := pbVarint(data, i)
	if err != nil {
		return 0, 0, err
	}
	n := int(v)
	if n < 0 {
		return 0, 0, errPBLength
	}
	end := start + n
	switch {
	case end < 0:
		return 0, 0, errPBLength
	case end > len(data):
		return 0, 0, io.ErrUnexpectedEOF
	}
	return start, end, nil
}

// pbSkip skips the field whose tag is at data[i:], which must end by
// limit, and returns the index after it.
func pbSkip(data []byte, i, limit int) (int, error) {
	n, err := pbSkipLen(data[i:])
	if err != nil {
		return 0, err
	}
	if n < 0 || i+n < 0 {
		return 0, errPBLength
	}
	if i+n > limit {
		return 0, io.ErrUnexpectedEOF
	}
	return i + n, nil
}

// pbSkipLen returns the length of the field (or group) at the start of
// data.
func pbSkipLen(data []byte) (int, error) {
	i, depth := 0, 0
	for i < len(data) {
		wire, next, err := pbVarint(data, i)
		if err != nil {
			return 0, err
		}
		i = next
		switch wire & 7 {
		case 0:
			if _, i, err = pbVarint(data, i); err != nil {
				return 0, err
			}
		case 1:
			i += 8
		case 2:
			v, next, err := pbVarint(data, i)
			if err != nil {
				return 0, err
			}
			n := int(v)
			if n < 0 {
				return 0, errPBLength
			}
			i = next + n
		case 3:
			depth++
		case 4:
			if depth == 0 {
				return 0, errPBEndOfGroup
			}
			depth--
		case 5:
			i += 4
		default:
			return 0, fmt.Errorf("%w %d", errPBWireTypeValue, wire&7)
		}
		if i < 0 {
			return 0, errPBLength
		}
		if depth == 0 {
			return i, nil
		}
	}
	return 0, io.ErrUnexpectedEOF
}

// pbCountVarints returns the number of varints ending in b, which gogo
// gives a packed list as its capacity.
func pbCountVarints(b []byte) int {
	n := 0
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	return n
}

// pbWrongType is the error of a field of message msg with wire type typ
// where its declaration wants another.
func pbWrongType(msg, field string, typ int) error {
	return fmt.Errorf("%s: wrong wire type %d for field %s", msg, typ, field)
}

// pbField wraps err, an error decoding field of message msg.
func pbField(msg, field string, err error) error {
	return fmt.Errorf("%s.%s: %w", msg, field, err)
}

// pbCountFields counts, in counts[j], the fields from data[i:] on whose
// tag is tags[j], stopping at the first it cannot read. The decoder gives
// a repeated field's slice that capacity from its first element on: where
// appending one by one, as gogo's code does, allocated a pod's lists about
// twice over (1, 2, 4… elements, each copied into the next).
func pbCountFields(data []byte, i int, tags []uint64, counts []int) {
	for i < len(data) {
		wire, next, err := pbVarint(data, i)
		if err != nil {
			return
		}
		for j, tag := range tags {
			if wire == tag {
				counts[j]++
			}
		}
		switch wire & 7 {
		case 0:
			_, next, err = pbVarint(data, next)
		case 1:
			next += 8
		case 2:
			_, next, err = pbLen(data, next)
		case 5:
			next += 4
		default:
			return
		}
		if err != nil {
			return
		}
		i = next
	}
}

package oci

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// WriteJSON writes idx as JSON, the same document json.Marshal makes
// (followed by a newline, as json.Encoder ends one), an entry at a time:
// json.Encoder would build the whole document in memory first, 40 MB and
// more for a layer of 200,000 files.
func (idx *LayerIndex) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	head := struct {
		Format int    `json:"format"`
		Digest string `json:"digest"`
		DiffID string `json:"diff_id,omitempty"`
	}{idx.Format, idx.Digest, idx.DiffID}
	b, err := json.Marshal(head)
	if err != nil {
		return err
	}
	bw.Write(b[:len(b)-1]) // without the closing brace
	if idx.Len() == 0 && !idx.entries.listed {
		bw.WriteString(`,"entries":null}` + "\n")
		return bw.Flush()
	}
	bw.WriteString(`,"entries":[`)
	for i := range idx.Len() {
		if i > 0 {
			bw.WriteByte(',')
		}
		e := idx.Entry(i)
		b, err := json.Marshal(&e)
		if err != nil {
			return err
		}
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// ReadLayerIndexJSON reads what WriteJSON (or json.Marshal) wrote, an
// entry at a time: json.Decoder would hold the whole document as well as
// the index it decodes.
func ReadLayerIndexJSON(r io.Reader) (*LayerIndex, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	idx := &LayerIndex{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		switch key {
		case "format":
			err = dec.Decode(&idx.Format)
		case "digest":
			err = dec.Decode(&idx.Digest)
		case "diff_id":
			err = dec.Decode(&idx.DiffID)
		case "entries":
			err = readEntries(dec, idx)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return nil, fmt.Errorf("layer index, %q: %w", key, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	return idx, nil
}

func readEntries(dec *json.Decoder, idx *LayerIndex) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		idx.entries = packedEntries{}
		return nil
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return errors.New("not a list")
	}
	idx.entries = packedEntries{listed: true}
	for dec.More() {
		var e IndexEntry
		if err := dec.Decode(&e); err != nil {
			return err
		}
		if err := idx.Append(e); err != nil {
			return err
		}
	}
	idx.entries.done()
	return expectDelim(dec, ']')
}

// MarshalJSON implements json.Marshaler: the document WriteJSON writes.
func (idx *LayerIndex) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := idx.WriteJSON(&b); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (idx *LayerIndex) UnmarshalJSON(b []byte) error {
	got, err := ReadLayerIndexJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	*idx = *got
	return nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("layer index: want %q, got %v", want, t)
	}
	return nil
}

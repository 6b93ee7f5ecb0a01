package codec_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
)

// gobCodec encodes values with encoding/gob. A new encoder per call keeps it
// safe for concurrent use, as a Codec must be.
type gobCodec struct{}

func (gobCodec) Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, fmt.Errorf("gob: %w", err)
	}
	return buf.Bytes(), nil
}

func (gobCodec) Unmarshal(data []byte, v any) error {
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(v); err != nil {
		return fmt.Errorf("gob: %w", err)
	}
	return nil
}

func (gobCodec) Name() string { return "gob" }

// Any type with Marshal, Unmarshal and Name is a codec; give it to a queue
// with blocking.WithCodec.
func ExampleCodec() {
	mr, err := miniredis.Run() // an embedded server; use your Redis in production
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	type Point struct{ X, Y int }
	ctx := context.Background()
	q := blocking.New[Point](rdb, "points", blocking.WithCodec(gobCodec{}))
	defer q.Close()

	if _, err := q.Offer(ctx, Point{X: 3, Y: 4}); err != nil {
		panic(err)
	}
	p, err := q.Take(ctx)
	fmt.Printf("%+v %v\n", p, err)
	// Output:
	// {X:3 Y:4} <nil>
}

func ExampleJSON() {
	type Order struct {
		ID     string  `json:"id"`
		Amount float64 `json:"amount"`
	}
	c := codec.JSON()
	data, err := c.Marshal(Order{ID: "A-1", Amount: 9.5})
	fmt.Println(string(data), err)

	var o Order
	err = c.Unmarshal(data, &o)
	fmt.Printf("%+v %v\n", o, err)
	// Output:
	// {"id":"A-1","amount":9.5} <nil>
	// {ID:A-1 Amount:9.5} <nil>
}

// Msgpack, the default codec, falls back to json tags for field names, so
// the same struct works with either codec.
func ExampleMsgpack() {
	type Order struct {
		ID     string  `json:"id"`
		Amount float64 `json:"amount"`
	}
	c := codec.Msgpack()
	data, err := c.Marshal(Order{ID: "A-1", Amount: 9.5})
	if err != nil {
		panic(err)
	}
	var fields map[string]any
	if err := c.Unmarshal(data, &fields); err != nil {
		panic(err)
	}
	fmt.Println(fields)

	var o Order
	err = c.Unmarshal(data, &o)
	fmt.Printf("%+v %v\n", o, err)
	// Output:
	// map[amount:9.5 id:A-1]
	// {ID:A-1 Amount:9.5} <nil>
}

// Raw stores strings and byte slices as they are, and refuses other types.
func ExampleRaw() {
	c := codec.Raw()
	data, err := c.Marshal("already encoded")
	fmt.Printf("%q %v\n", data, err)

	_, err = c.Marshal(42)
	fmt.Println(errors.Is(err, codec.ErrUnsupportedType))
	// Output:
	// "already encoded" <nil>
	// true
}

package seedtest

// BenchValue is the small struct the benchmarks offer: a typical job
// reference, a few dozen bytes with the default msgpack codec.
type BenchValue struct {
	ID       int64  `msgpack:"id"`
	Kind     string `msgpack:"kind"`
	Customer string `msgpack:"customer"`
	Amount   int64  `msgpack:"amount"`
}

// NewBenchValue is the benchmarks' value number i.
func NewBenchValue(i int) BenchValue {
	return BenchValue{ID: int64(i), Kind: "invoice.send", Customer: "customer-000123", Amount: 4200}
}

// BenchValues are the benchmarks' values 0 to n-1.
func BenchValues(n int) []BenchValue {
	vs := make([]BenchValue, n)
	for i := range vs {
		vs[i] = NewBenchValue(i)
	}
	return vs
}

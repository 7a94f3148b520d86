package receipts

import "testing"

// BenchmarkVerifyChain measures VerifyChain per receipt over a 2,000-receipt chain.
func BenchmarkVerifyChain(b *testing.B) {
	key, _ := GenerateKey()
	chain := signChain(b, key, 2000)
	opts := Options{Keys: PinnedKey(pub(key))}
	b.ResetTimer()
	for b.Loop() {
		VerifyChain(chain, opts)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(chain)), "ns/receipt")
}

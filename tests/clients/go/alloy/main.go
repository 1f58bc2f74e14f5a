// A pusher that sends what Grafana Alloy's pyroscope.scrape and pyroscope.write send, on
// the client they push with: the generated Connect client of Pyroscope's push API
// (pushv1connect, github.com/grafana/pyroscope/api v1.5.0, as Alloy's go.mod names it)
// with pyroscope.write's options: the Connect protocol and its protobuf codec, no
// request compression, an http.Transport as Alloy builds it (compression off, HTTP/2 only
// where TLS offers it: HTTP/1.1 to an http:// URL), the endpoint's headers
// (X-Scope-OrgID, X-Alloy-Id), basic auth, a User-Agent, a 10 s remote timeout. One
// series a push, labelled as pyroscope.scrape labels a target, reserved `__` labels
// dropped but __name__ and __delta__, external labels added, sorted by name.
//
// It profiles itself as Alloy scrapes a Go target's /debug/pprof/profile (a gzipped
// pprof of runtime/pprof), in WINDOWS windows, each pushed as process_cpu, while hotA
// (under the pprof label phase=a) and hotB run, and the allocs profile as memory, Alloy's
// way: the first one kept as the baseline, each later one as its delta (alloc_* less the
// last one's, inuse_* as is) with __delta__="false".
//
// Usage: alloy-push URL SERVICE WINDOWS, or alloy-push URL SERVICE bad (one push of a
// body that is not a pprof: prints the Connect error code, by which pyroscope.write
// retries or drops a push). Prints the CPU nanoseconds and the alloc_space bytes it
// pushed, and the number of pushes. $ALLOY_PASSWORD: basic auth's password.
//
// $CONNECT_PROTOCOL picks another of the Connect client's protocols, as a Pyroscope user
// may configure a pushv1connect client: `grpc` (connect.WithGRPC(), HTTP/2 without TLS,
// as to Pyroscope's one port), `grpcweb` (connect.WithGRPCWeb()) or `json` (the Connect
// protocol with its JSON codec, connect.WithProtoJSON()).
package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"golang.org/x/net/http2"
)

const remoteTimeout = 10 * time.Second // pyroscope.write's default remote_timeout

var sink [][]byte

//go:noinline
func hotA() int {
	total := 0
	for i := 0; i < 6_000_000; i++ {
		total += i * i
	}
	sink = append(sink[:0], make([]byte, 64<<10))
	return total
}

//go:noinline
func hotB() int {
	total := 0
	for i := 0; i < 1_000_000; i++ {
		total += i
	}
	return total
}

// basicAuth sets the endpoint's basic_auth on each request, as Prometheus' round tripper
// does: the user a Grafana Cloud tenant id, the password its token.
type basicAuth struct {
	next     http.RoundTripper
	password string
}

func (b basicAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.SetBasicAuth("123456", b.password)
	return b.next.RoundTrip(req)
}

// httpClient is pyroscope.write's client (promhttp2) with its defaults: enable_http2 and
// follow_redirects on, no h2c; basic auth with the password in $ALLOY_PASSWORD, if any.
func httpClient() *http.Client {
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		MaxIdleConns:          20000,
		MaxIdleConnsPerHost:   1000,
		DisableCompression:    true,
		IdleConnTimeout:       5 * time.Minute,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
	}
	h2, err := http2.ConfigureTransports(transport)
	if err != nil {
		panic(err)
	}
	h2.ReadIdleTimeout = time.Minute
	if password := os.Getenv("ALLOY_PASSWORD"); password != "" {
		return &http.Client{Transport: basicAuth{transport, password}}
	}
	return &http.Client{Transport: transport}
}

// h2cClient is an HTTP/2 client without TLS (prior knowledge), as gRPC to an http:// URL
// needs; basic auth as httpClient's.
func h2cClient() *http.Client {
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	transport := &http.Transport{Protocols: protocols, DisableCompression: true}
	if password := os.Getenv("ALLOY_PASSWORD"); password != "" {
		return &http.Client{Transport: basicAuth{transport, password}}
	}
	return &http.Client{Transport: transport}
}

// newClient is pyroscope.write's client, or the one $CONNECT_PROTOCOL names.
func newClient(url string) pushv1connect.PusherServiceClient {
	options := []connect.ClientOption{connect.WithInterceptors(connect.UnaryInterceptorFunc(userAgent))}
	transport := httpClient()
	switch protocol := os.Getenv("CONNECT_PROTOCOL"); protocol {
	case "":
	case "grpc":
		options, transport = append(options, connect.WithGRPC()), h2cClient()
	case "grpcweb":
		options = append(options, connect.WithGRPCWeb())
	case "json":
		options = append(options, connect.WithProtoJSON())
	default:
		panic("unknown CONNECT_PROTOCOL " + protocol)
	}
	return pushv1connect.NewPusherServiceClient(transport, url, options...)
}

// userAgent is pyroscope.write's interceptor setting the User-Agent.
func userAgent(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("User-Agent", "Alloy/v1.12.0 (linux; binary)")
		return next(ctx, req)
	}
}

// labels of a scraped target as pyroscope.write sends them, sorted by name.
func labels(service, name string, extra map[string]string) []*typesv1.LabelPair {
	all := map[string]string{
		"__name__":        name,
		"service_name":    service,
		"job":             "pyroscope.scrape.default",
		"instance":        "127.0.0.1:6060",
		"otel.scope.name": "com.grafana.alloy/pyroscope.scrape",
		"cluster":         "test", // an external label
	}
	for k, v := range extra {
		all[k] = v
	}
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	pairs := make([]*typesv1.LabelPair, 0, len(names))
	for _, k := range names {
		pairs = append(pairs, &typesv1.LabelPair{Name: k, Value: all[k]})
	}
	return pairs
}

func push(client pushv1connect.PusherServiceClient, pairs []*typesv1.LabelPair, raw []byte) error {
	req := connect.NewRequest(&pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{
		{Labels: pairs, Samples: []*pushv1.RawSample{{RawProfile: raw}}},
	}})
	req.Header().Set("X-Scope-OrgID", "tenant-a")
	req.Header().Set("X-Alloy-Id", "alloy-test")
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	_, err := client.Push(ctx, req)
	return err
}

// total of one sample type over a profile's samples.
func total(p *profile.Profile, kind string) int64 {
	for i, t := range p.SampleType {
		if t.Type == kind {
			var sum int64
			for _, s := range p.Sample {
				sum += s.Value[i]
			}
			return sum
		}
	}
	panic("no sample type " + kind)
}

// cpuProfile records a CPU profile while the busy functions run `calls` times: a
// fixed amount of work (about 0.7 s of CPU time), however loaded the machine is.
func cpuProfile(calls int) []byte {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		panic(err)
	}
	result := 0
	for i := 0; i < calls; i++ {
		pprof.Do(context.Background(), pprof.Labels("phase", "a"), func(context.Context) {
			result += hotA()
		})
		result += hotB()
	}
	pprof.StopCPUProfile()
	runtime.KeepAlive(result)
	return buf.Bytes()
}

func allocs() *profile.Profile {
	var buf bytes.Buffer
	if err := pprof.Lookup("allocs").WriteTo(&buf, 0); err != nil {
		panic(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		panic(err)
	}
	return p
}

// delta of the allocs profile since `last`, as Alloy's scrape computes it: alloc_* less
// the last profile's, inuse_* as they are; samples left all zero dropped.
func delta(last, now *profile.Profile) *profile.Profile {
	ratios := make([]float64, len(last.SampleType))
	for i, t := range last.SampleType {
		if t.Type == "alloc_objects" || t.Type == "alloc_space" {
			ratios[i] = -1
		}
	}
	negated := last.Copy()
	if err := negated.ScaleN(ratios); err != nil {
		panic(err)
	}
	merged, err := profile.Merge([]*profile.Profile{now, negated})
	if err != nil {
		panic(err)
	}
	kept := merged.Sample[:0]
	for _, s := range merged.Sample {
		for _, v := range s.Value {
			if v != 0 {
				kept = append(kept, s)
				break
			}
		}
	}
	merged.Sample = kept
	merged.TimeNanos, merged.DurationNanos = now.TimeNanos, now.TimeNanos-last.TimeNanos
	return merged
}

func encode(p *profile.Profile) []byte {
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil { // gzipped, as net/http/pprof serves it
		panic(err)
	}
	return buf.Bytes()
}

func main() {
	url, service := os.Args[1], os.Args[2]
	client := newClient(url)
	if os.Args[3] == "bad" {
		err := push(client, labels(service, "process_cpu", nil), []byte("not a profile"))
		fmt.Println(connect.CodeOf(err))
		return
	}
	windows, _ := strconv.Atoi(os.Args[3])
	var cpuNanos, allocBytes int64
	pushes := 0
	last := allocs() // the baseline: Alloy pushes no memory profile for its first scrape
	for i := 0; i < windows; i++ {
		raw := cpuProfile(200)
		p, err := profile.ParseData(raw)
		if err != nil {
			panic(err)
		}
		if err := push(client, labels(service, "process_cpu", nil), raw); err != nil {
			fmt.Fprintln(os.Stderr, "push process_cpu:", err)
			os.Exit(1)
		}
		cpuNanos += total(p, "cpu")
		now := allocs()
		memory := delta(last, now)
		last = now
		if err := push(client, labels(service, "memory", map[string]string{"__delta__": "false"}), encode(memory)); err != nil {
			fmt.Fprintln(os.Stderr, "push memory:", err)
			os.Exit(1)
		}
		allocBytes += total(memory, "alloc_space")
		pushes += 2
	}
	fmt.Println(cpuNanos, allocBytes, pushes)
}

// Package s3test runs a real S3-compatible server for tests: Versity's S3
// gateway (versitygw, github.com/versity/versitygw) on its POSIX backend,
// in a temporary directory on a loopback port, started on first use and
// stopped by Main. Each test gets a bucket of its own. .ci/deps/s3.sh
// installs the server with go install at a pinned version and exports its
// path in DOCKET_S3_SERVER.
package s3test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/docketlog/docket/internal/testproc"
)

// Skip is the message of a test skipped for want of a server.
const Skip = "no S3-compatible server: .ci/deps/s3.sh installs Versity's S3 gateway " +
	"(go install github.com/versity/versitygw/cmd/versitygw@v1.8.0) and exports DOCKET_S3_SERVER"

// The server's root credentials and region.
const (
	AccessKey = "docket-test"
	SecretKey = "docket-test-secret"
	Region    = "us-east-1"
)

var (
	once     sync.Once
	srv      *server
	srvErr   error
	bucketNo atomic.Int64
)

type server struct {
	dir      string
	endpoint string
	proc     *testproc.Proc
}

// Main runs the tests and then stops the server if a test started it.
// Use it as TestMain: func TestMain(m *testing.M) { os.Exit(s3test.Main(m)) },
// or call Stop after the tests.
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

// Stop stops the server if a test started it.
func Stop() {
	if srv != nil {
		srv.stop()
	}
}

// Binary returns the path of the server's binary: $DOCKET_S3_SERVER, else
// versitygw in PATH or in $GOPATH/bin (default ~/go/bin); "" if none.
func Binary() string {
	if p := os.Getenv("DOCKET_S3_SERVER"); p != "" {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	if p := filepath.Join(gopath, "bin", "versitygw"); fileExists(p) {
		return p
	}
	return ""
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// A Bucket is a new, empty bucket on the test server.
type Bucket struct {
	// Name is the bucket's name.
	Name string
	// Endpoint is the server's URL (http://127.0.0.1:PORT), addressed
	// path-style: an object's URL is Endpoint/Name/key.
	Endpoint string
}

// NewBucket creates a bucket on the test server, starting the server on
// first use. The test is skipped if no server is installed, and fails if
// one cannot be started.
func NewBucket(t testing.TB) Bucket {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip(Skip)
	}
	once.Do(func() { srv, srvErr = start(bin) })
	if srvErr != nil {
		t.Fatalf("starting the S3 server: %v", srvErr)
	}
	return srv.newBucket(t)
}

func (s *server) newBucket(t testing.TB) Bucket {
	t.Helper()
	b := Bucket{Name: fmt.Sprintf("t%d-%d", os.Getpid(), bucketNo.Add(1)), Endpoint: s.endpoint}
	if _, err := b.Client().CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(b.Name)}); err != nil {
		t.Fatalf("creating bucket %s: %v", b.Name, err)
	}
	return b
}

// A Server is a test's own S3 server, for a test that stops it.
type Server struct{ s *server }

// NewServer starts a server for the test alone, stopped when the test
// ends; skipped as NewBucket is.
func NewServer(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip(Skip)
	}
	s, err := start(bin)
	if err != nil {
		t.Fatalf("starting the S3 server: %v", err)
	}
	t.Cleanup(s.stop)
	return &Server{s}
}

// NewBucket creates a bucket on the server.
func (s *Server) NewBucket(t testing.TB) Bucket { return s.s.newBucket(t) }

// Stop stops the server (SIGTERM). A stopped server cannot start again.
func (s *Server) Stop() { s.s.proc.Stop() }

// Config returns an AWS SDK configuration with the server's credentials
// and region.
func Config() aws.Config {
	return aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	}
}

// Env returns the environment variables that give the AWS SDK's default
// chain the server's credentials and region.
func Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + AccessKey, "AWS_SECRET_ACCESS_KEY=" + SecretKey, "AWS_REGION=" + Region,
		"AWS_EC2_METADATA_DISABLED=true"}
}

// Client returns an S3 client of the server with its root credentials.
func (b Bucket) Client() *s3.Client {
	return s3.NewFromConfig(Config(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(b.Endpoint)
		o.UsePathStyle = true
	})
}

// URL returns the public URL of the objects under prefix ("" for the
// whole bucket), without a trailing slash.
func (b Bucket) URL(prefix string) string {
	u := b.Endpoint + "/" + b.Name
	if prefix != "" {
		u += "/" + strings.Trim(prefix, "/")
	}
	return u
}

// PublicPolicy is the bucket policy that lets anyone read the objects
// under prefix ("" for the whole bucket) of bucket, and nothing else:
// deploy/aws.md gives the same policy for a log's bucket.
func PublicPolicy(bucket, prefix string) string {
	res := "arn:aws:s3:::" + bucket + "/*"
	if prefix != "" {
		res = "arn:aws:s3:::" + bucket + "/" + strings.Trim(prefix, "/") + "/*"
	}
	return `{"Version":"2012-10-17","Statement":[{"Sid":"PublicReadOfTheLog","Effect":"Allow",` +
		`"Principal":"*","Action":"s3:GetObject","Resource":"` + res + `"}]}`
}

// MakePublic applies PublicPolicy(b.Name, prefix) to the bucket and
// returns URL(prefix).
func (b Bucket) MakePublic(t testing.TB, prefix string) string {
	t.Helper()
	_, err := b.Client().PutBucketPolicy(t.Context(), &s3.PutBucketPolicyInput{
		Bucket: aws.String(b.Name), Policy: aws.String(PublicPolicy(b.Name, prefix))})
	if err != nil {
		t.Fatalf("setting the bucket policy of %s: %v", b.Name, err)
	}
	return b.URL(prefix)
}

// start runs the server on a free loopback port, trying again if another
// process took the port first.
func start(bin string) (*server, error) {
	var err error
	for range 3 {
		var s *server
		if s, err = startOnce(bin); err == nil {
			return s, nil
		}
	}
	return nil, err
}

func startOnce(bin string) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	dir, err := os.MkdirTemp("", "s3test")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return nil, err
	}
	s := &server{dir: dir, endpoint: "http://" + addr}
	cmd := exec.Command(bin, "--access", AccessKey, "--secret", SecretKey, "--region", Region,
		"--port", addr, "--quiet", "posix", data)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if s.proc, err = testproc.Start(cmd, filepath.Join(dir, "versitygw.log")); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// The server answers any HTTP status once it is up.
	client := &http.Client{Timeout: time.Second}
	err = s.proc.Ready(func(ctx context.Context) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.endpoint+"/", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, "")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *server) stop() {
	s.proc.Stop()
	os.RemoveAll(s.dir)
}

package pprofui

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// testProfile is a two-stack api-view profile.
func testProfile() *profile.Profile {
	fn := func(id uint64, name string) *profile.Function {
		return &profile.Function{ID: id, Name: name, SystemName: name}
	}
	f1, f2, f3 := fn(1, "step"), fn(2, "cuMemAllocAsync"), fn(3, "cuStreamSynchronize")
	loc := func(id uint64, f *profile.Function) *profile.Location {
		return &profile.Location{ID: id, Line: []profile.Line{{Function: f}}}
	}
	l1, l2, l3 := loc(1, f1), loc(2, f2), loc(3, f3)
	return &profile.Profile{
		SampleType:        []*profile.ValueType{{Type: "calls", Unit: "count"}, {Type: "time", Unit: "nanoseconds"}},
		DefaultSampleType: "time",
		Sample: []*profile.Sample{
			{Location: []*profile.Location{l2, l1}, Value: []int64{3, 3000}},
			{Location: []*profile.Location{l3, l1}, Value: []int64{1, 500}},
		},
		Location: []*profile.Location{l1, l2, l3},
		Function: []*profile.Function{f1, f2, f3},
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b)
}

func TestServe(t *testing.T) {
	s, err := Start(testProfile(), WithName("test.cuprof"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || !strings.HasSuffix(s.URL, "/ui/flamegraph?token="+s.Token) || len(s.Token) != 32 {
		t.Errorf("URL = %q, want http://127.0.0.1:PORT/ui/flamegraph?token=TOKEN", s.URL)
	}
	for _, page := range []string{"/ui/flamegraph", "/ui/top", "/"} {
		body := get(t, s.Page(page))
		for _, api := range []string{"cuMemAllocAsync", "cuStreamSynchronize"} {
			if !strings.Contains(body, api) {
				t.Errorf("%s does not name %s", page, api)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait after Close = %v", err)
	}
}

func TestStartBadAddr(t *testing.T) {
	if _, err := Start(testProfile(), WithAddr("256.0.0.1:0")); err == nil {
		t.Error("Start on a bad address: no error")
	}
}

func TestProfileName(t *testing.T) {
	for in, want := range map[string]string{"/tmp/a/run.cuprof": "run.cuprof", "-http=x": "cuprof", "a b": "cuprof", "-x": "cuprof"} {
		if got := ProfileName(in); got != want {
			t.Errorf("ProfileName(%q) = %q, want %q", in, got, want)
		}
	}
}

// do sends a GET with the given Host header and returns the status and body.
func do(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestNoFileOpened serves a profile whose function and mapping name a local
// file (a crafted trace can name any): the source and disassembly pages
// never show it, and the UI writes nothing under HOME (pprof saves fetched
// profiles in ~/pprof and settings in ~/.config/pprof).
func TestNoFileOpened(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("PPROF_TMPDIR", "")
	secret := filepath.Join(t.TempDir(), "secret.go")
	if err := os.WriteFile(secret, []byte("package secret // the-secret-line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := testProfile()
	m := &profile.Mapping{ID: 1, Start: 0x1000, Limit: 0x2000, File: secret, HasFunctions: true}
	p.Mapping = []*profile.Mapping{m}
	for _, l := range p.Location {
		l.Mapping, l.Address = m, 0x1100
		l.Line[0].Line = 1
		l.Line[0].Function.Filename = secret
	}
	s, err := Start(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	get(t, s.URL)
	for _, page := range []string{"/ui/source?f=.*", "/ui/source?f=step", "/ui/disasm?f=.*", "/ui/saveconfig?config=x", "/ui/deleteconfig?config=x"} {
		code, body := do(t, s.Page(page), "")
		if code != http.StatusNotFound || strings.Contains(body, "the-secret-line") || !strings.Contains(body, "cuprof view") {
			t.Errorf("GET %s: %d %q; want 404 saying why", page, code, body)
		}
	}
	s.Close()
	s.Wait()
	entries, _ := os.ReadDir(home)
	for _, e := range entries {
		t.Errorf("the UI wrote %s under HOME", e.Name())
	}
}

// TestHostHeader refuses requests whose Host names another site (DNS
// rebinding), and serves the loopback names with any port (an SSH tunnel's
// local end has its own).
func TestHostHeader(t *testing.T) {
	s, err := Start(testProfile())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(s.Base, "http://"), ":")
	for host, want := range map[string]int{
		"127.0.0.1:" + port:              http.StatusOK,
		"localhost:" + port:              http.StatusOK,
		"LOCALHOST:" + port:              http.StatusOK,
		"[::1]:" + port:                  http.StatusOK,
		"evil.example:" + port:           http.StatusForbidden,
		"evil.example":                   http.StatusForbidden,
		"127.0.0.1:1":                    http.StatusOK,
		"localhost:9000":                 http.StatusOK,
		"localhost.evil.example:" + port: http.StatusForbidden,
		"10.0.0.1:" + port:               http.StatusForbidden,
	} {
		if code, body := do(t, s.URL, host); code != want {
			t.Errorf("Host %q: %d %q, want %d", host, code, body, want)
		}
	}
}

// TestToken: a request without the server's token is refused, whatever
// page it asks for (another local user can reach the port); the token in
// the URL sets a cookie the UI's own links then carry.
func TestToken(t *testing.T) {
	s, err := Start(testProfile())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := Start(testProfile())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if s.Token == other.Token {
		t.Fatalf("two servers share the token %s", s.Token)
	}
	for _, u := range []string{s.Base + "/ui/flamegraph", s.Base + "/ui/download", s.Base + "/", s.Base + "/ui/top?token=",
		s.Base + "/ui/download?token=" + other.Token, s.Base + "/ui/download?token=" + s.Token[:31]} {
		if code, body := do(t, u, ""); code != http.StatusForbidden || strings.Contains(body, "cuMemAllocAsync") {
			t.Errorf("GET %s without the token: %d %q, want 403", u, code, body)
		}
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	for _, u := range []string{s.URL, s.Base + "/ui/top", s.Base + "/ui/download"} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s after the token: %s", u, resp.Status)
		}
	}
	req, _ := http.NewRequest("GET", s.Base+"/ui/top", nil)
	req.Header.Set("Authorization", "token "+s.Token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("Authorization header: %v %v", resp, err)
	}
}

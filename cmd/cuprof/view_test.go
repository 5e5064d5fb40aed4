package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cuprof/cuprof/internal/pprofui"
)

// viewServe runs "cuprof view" with args, calls f with the server, and
// stops the server when f returns.
func viewServe(t *testing.T, args []string, f func(s *pprofui.Server)) (stdout, stderr string) {
	t.Helper()
	viewStarted = func(s *pprofui.Server) {
		defer s.Close()
		f(s)
	}
	defer func() { viewStarted = nil }()
	stdout, stderr, err := runFlameCLI(append([]string{"view", "--no-browser"}, args...)...)
	if err != nil {
		t.Fatalf("view: %v\n%s", err, stderr)
	}
	return stdout, stderr
}

func httpGet(t *testing.T, url string) string {
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
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}

var flameAPIs = []string{"cuMemAllocAsync", "cuStreamSynchronize", "cuMemFreeAsync"}

func TestViewCmd(t *testing.T) {
	var token string
	stdout, _ := viewServe(t, []string{flameFixture("nested.txt")}, func(s *pprofui.Server) {
		token = s.Token
		// cuMemFreeAsync took less than the per-call cost: it has calls, no time
		for page, names := range map[string][]string{
			"/ui/flamegraph":   append(flameAPIs, "Buffer.alloc"),
			"/ui/top":          {"cuMemAllocAsync", "cuStreamSynchronize", "Buffer.alloc"},
			"/ui/top?si=calls": flameAPIs,
		} {
			body := httpGet(t, s.Page(page))
			for _, api := range names {
				if !strings.Contains(body, api) {
					t.Errorf("%s does not name %s", page, api)
				}
			}
		}
	})
	if !strings.Contains(stdout, "http://127.0.0.1:") || !strings.Contains(stdout, "/ui/flamegraph?token="+token+" ") {
		t.Errorf("view did not print its URL with the token: %q", stdout)
	}
}

func TestViewCmdMemory(t *testing.T) {
	viewServe(t, []string{flameFixture("memory.txt"), "--view", "memory"}, func(s *pprofui.Server) {
		body := httpGet(t, s.URL)
		for _, s := range []string{"cuMemAllocHost", "alloc_space"} {
			if !strings.Contains(body, s) {
				t.Errorf("memory flame graph does not name %s", s)
			}
		}
	})
}

// findChromium returns a headless-capable Chromium: $CUPROF_CHROMIUM, or
// chromium, chromium-browser, google-chrome on PATH.
func findChromium() string {
	if p := os.Getenv("CUPROF_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// chromium runs a headless Chromium with a private profile directory.
func chromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a loaded machine starts Chromium slowly
	defer cancel()
	dir := t.TempDir()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir=" + filepath.Join(dir, "profile"), "--virtual-time-budget=5000"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, stderr.String())
	}
	return out
}

// TestViewChromium loads the flame graph page in headless Chromium, so the
// page's scripts run, and checks the API names are on the rendered page.
func TestViewChromium(t *testing.T) {
	bin := findChromium()
	if bin == "" {
		t.Skip("no chromium on PATH (apt-get install chromium, or set CUPROF_CHROMIUM)")
	}
	viewServe(t, []string{flameFixture("nested.txt")}, func(s *pprofui.Server) {
		dom := string(chromium(t, bin, "--dump-dom", s.URL))
		for _, api := range flameAPIs {
			if !strings.Contains(dom, api) {
				t.Errorf("the flame graph rendered by %s does not name %s", bin, api)
			}
		}
		// the flame graph's script draws a box per frame: the wide ones must
		// be on the rendered page with their names (the raw page has none)
		for _, name := range []string{"step", "Buffer.alloc", "cuMemAllocAsync"} {
			box := regexp.MustCompile(`<div class="boxtext"[^>]*>` + regexp.QuoteMeta(name) + `<`)
			if !box.MatchString(dom) {
				t.Errorf("no flame graph box named %s on the page %s rendered", name, bin)
			}
		}
	})
}

// TestViewFIFOAndStdin: a trace or a profile from a FIFO, and a profile on
// standard input: the sniff of the first bytes consumes none of them.
func TestViewFIFOAndStdin(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "p.pb.gz")
	if _, _, err := runFlameCLI("flame", flameFixture("nested.txt"), "-o", prof); err != nil {
		t.Fatal(err)
	}
	traceData, _ := os.ReadFile(flameFixture("nested.txt"))
	profData, _ := os.ReadFile(prof)
	for name, data := range map[string][]byte{"trace": traceData, "profile": profData} {
		fifo := filepath.Join(dir, name+".fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		go func() {
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			f.Write(data)
			f.Close()
		}()
		viewServe(t, []string{fifo}, func(s *pprofui.Server) {
			if body := httpGet(t, s.URL); !strings.Contains(body, "cuMemAllocAsync") {
				t.Errorf("view of a %s through a FIFO: the flame graph lacks its frames", name)
			}
		})
	}
	viewStarted = func(s *pprofui.Server) {
		defer s.Close()
		if body := httpGet(t, s.URL); !strings.Contains(body, "cuMemAllocAsync") {
			t.Errorf("view of a profile on stdin: the flame graph lacks its frames")
		}
	}
	defer func() { viewStarted = nil }()
	var so, se bytes.Buffer
	if err := run([]string{"view", "--no-browser", "-"}, bytes.NewReader(profData), &so, &se); err != nil {
		t.Fatalf("view - (a profile): %v %s", err, se.String())
	}
}

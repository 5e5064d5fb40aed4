package pprofui

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// forward is an SSH tunnel's local end: a listener on another local port
// whose connections are copied to and from addr.
func forward(t *testing.T, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				s, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer s.Close()
				go io.Copy(s, c)
				io.Copy(c, s)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestThroughATunnel: through an SSH tunnel on another local port (the
// browser names that port in Host) the page is served with the token, and
// refused without it; the token is the protection.
func TestThroughATunnel(t *testing.T) {
	s, err := Start(testProfile())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	local := forward(t, strings.TrimPrefix(s.Base, "http://"))
	via := strings.Replace(s.URL, strings.TrimPrefix(s.Base, "http://"), local, 1)
	if code, body := do(t, via, ""); code != http.StatusOK || !strings.Contains(body, "cuMemAllocAsync") {
		t.Errorf("GET %s through the tunnel: %d", via, code)
	}
	if code, _ := do(t, "http://"+local+"/ui/flamegraph", ""); code != http.StatusForbidden {
		t.Errorf("through the tunnel without the token: %d, want 403", code)
	}
}

// TestAllInterfaces: on an address that is not loopback (--http
// 0.0.0.0:PORT, asked for), a request naming the machine by any name is
// served with the token, refused without it.
func TestAllInterfaces(t *testing.T) {
	s, err := Start(testProfile(), WithAddr("0.0.0.0:0"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.Base, "http://"))
	if code, _ := do(t, s.URL, "gpu-node-7.example:"+port); code != http.StatusOK {
		t.Errorf("Host gpu-node-7.example with the token: %d, want 200", code)
	}
	if code, _ := do(t, s.Base+"/ui/flamegraph", "gpu-node-7.example:"+port); code != http.StatusForbidden {
		t.Errorf("without the token: %d, want 403", code)
	}
}

// TestOpenBrowser: the browser used to be opened by pprof's driver on its
// URL without the token, which the server answers 403. It is opened on a
// private file redirecting to the URL with the token (not on the browser's
// command line, which ps shows every user); with no display it is not
// started at all.
func TestOpenBrowser(t *testing.T) {
	s, err := Start(testProfile())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var opened [][]string
	old := startBrowser
	defer func() { startBrowser = old }()
	startBrowser = func(argv []string) error { opened = append(opened, argv); return nil }

	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	if err := s.OpenBrowser(); !errors.Is(err, ErrNoDisplay) || len(opened) != 0 {
		t.Fatalf("no display: %v, started %v", err, opened)
	}

	t.Setenv("DISPLAY", ":0")
	fake := filepath.Join(t.TempDir(), "fake-browser")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", fake)
	if err := s.OpenBrowser(); err != nil {
		t.Fatal(err)
	}
	if len(opened) != 1 || len(opened[0]) != 2 || opened[0][0] != fake || !strings.HasPrefix(opened[0][1], "file://") {
		t.Fatalf("started %v; want the fake browser on a file", opened)
	}
	if strings.Contains(strings.Join(opened[0], " "), s.Token) {
		t.Errorf("the token is on the browser's command line: %v", opened[0])
	}
	page := strings.TrimPrefix(opened[0][1], "file://")
	st, err := os.Stat(page)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("redirect file %s: %v %v", page, st, err)
	}
	b, _ := os.ReadFile(page)
	_, after, ok := strings.Cut(string(b), `content="0;url=`)
	target, _, _ := strings.Cut(after, `"`)
	target = strings.ReplaceAll(target, "&amp;", "&")
	if !ok || target != s.URL {
		t.Fatalf("redirect file goes to %q, want %q", target, s.URL)
	}
	if code, _ := do(t, target, ""); code != http.StatusOK {
		t.Errorf("the page the browser is sent to answers %d, want 200", code)
	}
	s.Close()
	if _, err := os.Stat(page); err == nil {
		t.Errorf("the redirect file %s outlived the server", page)
	}
}

package pprofui

import (
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoDisplay says that no browser was started: there is no display (no
// DISPLAY or WAYLAND_DISPLAY, as over SSH).
var ErrNoDisplay = errors.New("no display (DISPLAY and WAYLAND_DISPLAY are unset)")

// browsers are the commands tried, in order, after $BROWSER (the ones
// pprof's driver tries on Linux, xdg-open first).
var browsers = []string{"xdg-open", "x-www-browser", "sensible-browser", "firefox", "chromium", "google-chrome"}

// startBrowser starts argv without waiting for it (a variable: the tests
// stand in one that records what it was asked to open).
var startBrowser = func(argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}

// OpenBrowser opens the UI's page, with its token, in the user's browser.
// The token is not put on the browser's command line, which every user of
// the machine can read (ps): as Jupyter does, the browser is given a file
// (mode 0600, in a private directory removed when the server closes) that
// redirects to the URL. Without a display it starts nothing and returns
// ErrNoDisplay.
func (s *Server) OpenBrowser() error {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return ErrNoDisplay
	}
	dir, err := os.MkdirTemp("", "cuprof-view-")
	if err != nil {
		return err
	}
	s.cleanup = append(s.cleanup, func() { os.RemoveAll(dir) })
	page := filepath.Join(dir, "open.html")
	u := html.EscapeString(s.URL)
	body := fmt.Sprintf("<!DOCTYPE html>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"refresh\" content=\"0;url=%s\">\n<title>cuprof view</title>\n<p><a href=\"%s\">open cuprof view</a></p>\n", u, u)
	if err := os.WriteFile(page, []byte(body), 0o600); err != nil {
		return err
	}
	var cands [][]string
	if b := strings.TrimSpace(os.Getenv("BROWSER")); b != "" {
		cands = append(cands, []string{b})
	}
	for _, b := range browsers {
		cands = append(cands, []string{b})
	}
	var errs []error
	for _, c := range cands {
		path, err := exec.LookPath(c[0])
		if err != nil {
			continue
		}
		if err := startBrowser(append([]string{path}, "file://"+page)); err != nil {
			errs = append(errs, err)
			continue
		}
		return nil
	}
	if len(errs) == 0 {
		return errors.New("no browser found (set BROWSER)")
	}
	return errors.Join(errs...)
}

// Package pprofui serves pprof's web UI (flame graph, top, graph, peek,
// source) for a profile built in memory, from inside cuprof, through
// github.com/google/pprof/driver: a Fetcher hands the driver the profile, and
// the HTTPServer hook takes the driver's handlers and serves them under /ui/ on
// a listener cuprof opened itself.
//
// Nothing named inside a trace is opened, and the UI writes nothing:
//   - symbolization and disassembly are replaced by ones that do nothing,
//     since a trace names binaries of another machine;
//   - the source and disassembly pages, which open the files a profile's
//     functions and mappings name, are not served (a trace carries no
//     source);
//   - the profile is handed over as a local one, so the driver saves no copy
//     of it (pprof saves fetched profiles to $PPROF_TMPDIR or ~/pprof), and
//     the pages that save and delete settings (~/.config/pprof) are not
//     served;
//   - on a loopback address (the default), only clients on this host,
//     naming it by a loopback address or localhost in the Host header (any
//     port: an SSH tunnel's local port differs from the server's), are
//     served: a page of another site cannot reach the UI through DNS
//     rebinding. On an address the user chose that is not loopback
//     (--http 0.0.0.0:PORT) any client and Host are, and the token alone
//     protects the profile;
//   - and only those that know the server's random token (128 bits, new
//     for every server), as Jupyter does: it is in the URL cuprof prints
//     (?token=...), and a request carrying it gets a cookie (HttpOnly,
//     SameSite=Strict) that lets the UI's own links work without it.
//     Another local user, who can reach the loopback port, cannot read the
//     profile.
package pprofui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/driver"
	"github.com/google/pprof/profile"
)

// Server is pprof's web UI serving one profile.
type Server struct {
	// URL is the address of the flame graph page, with the token.
	URL string
	// Base is the server's address, http://HOST:PORT, without the token.
	Base string
	// Token is the secret every request must carry (query parameter
	// token, the cookie it sets, or an "Authorization: token T" header).
	Token string

	ln      net.Listener
	srv     *http.Server
	done    chan error
	cleanup []func() // run by Close (OpenBrowser's redirect file)
}

type config struct {
	addr string
	log  io.Writer
	name string
}

// Option configures Start.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithAddr sets the listen address, "127.0.0.1:0" (a free port) by default.
func WithAddr(addr string) Option { return optionFunc(func(c *config) { c.addr = addr }) }

// WithLog sends the driver's messages to w (discarded by default).
func WithLog(w io.Writer) Option { return optionFunc(func(c *config) { c.log = w }) }

// WithName names the profile in the UI's title (the trace's file name).
func WithName(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// Start serves p's web UI and returns once it accepts connections. Close
// stops it.
func Start(p *profile.Profile, opts ...Option) (*Server, error) {
	cfg := config{addr: "127.0.0.1:0", log: io.Discard, name: "cuprof"}
	for _, o := range opts {
		o.apply(&cfg)
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (pass another --http address)", cfg.addr, err)
	}
	var secret [16]byte
	if _, err := rand.Read(secret[:]); err != nil {
		ln.Close()
		return nil, fmt.Errorf("make the UI's token: %w", err)
	}
	s := &Server{ln: ln, done: make(chan error, 1), Token: hex.EncodeToString(secret[:])}
	s.Base = "http://" + ln.Addr().String()
	s.URL = s.Page("/ui/flamegraph")

	ready := make(chan struct{})
	var once sync.Once
	// The driver's own browser would open its URL, which lacks the token
	// (and so gets 403): cuprof opens the browser itself (OpenBrowser).
	args := []string{"-http=" + ln.Addr().String(), "-no_browser", cfg.name}
	o := &driver.Options{
		Flagset: newFlags(args),
		Fetch:   fetcher{p},
		Sym:     noSymbolizer{},
		Obj:     noObjTool{},
		UI:      &ui{out: cfg.log},
		HTTPServer: func(a *driver.HTTPServerArgs) error {
			mux := http.NewServeMux()
			for path, h := range a.Handlers {
				if why, off := withheld[path]; off {
					h = refuse(why)
				}
				if path == "/" {
					mux.Handle("/ui/", h)
					continue
				}
				mux.Handle("/ui"+path, h)
			}
			mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				to := "/ui/flamegraph"
				if r.URL.RawQuery != "" {
					to += "?" + r.URL.RawQuery // the token too
				}
				http.Redirect(w, r, to, http.StatusFound)
			}))
			port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			h := withToken(s.Token, port, mux)
			if ln.Addr().(*net.TCPAddr).IP.IsLoopback() {
				h = localOnly(port, h)
			}
			s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
			once.Do(func() { close(ready) })
			err := s.srv.Serve(ln)
			if errors.Is(err, http.ErrServerClosed) {
				return nil
			}
			return err
		},
	}
	go func() {
		err := driver.PProf(o)
		once.Do(func() { close(ready) })
		s.done <- err
	}()
	<-ready
	if s.srv == nil {
		ln.Close()
		err := <-s.done
		if err == nil {
			err = errors.New("pprof did not start its web server")
		}
		return nil, fmt.Errorf("start pprof web ui: %w", err)
	}
	return s, nil
}

// Page is the URL of path (which may have a query) on s, with the token.
func (s *Server) Page(path string) string {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return s.Base + path + sep + "token=" + s.Token
}

// withToken serves only requests that carry token: as the query parameter
// token (which also sets the cookie, so the UI's own links, which drop the
// query, keep working), the cookie, or an Authorization header.
func withToken(token, port string, h http.Handler) http.Handler {
	name := "cuprof-view-" + port
	ok := func(v string) bool { return subtle.ConstantTimeCompare([]byte(v), []byte(token)) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case ok(r.URL.Query().Get("token")):
			http.SetCookie(w, &http.Cookie{Name: name, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		case ok(strings.TrimPrefix(r.Header.Get("Authorization"), "token ")):
		default:
			c, err := r.Cookie(name)
			if err != nil || !ok(c.Value) {
				http.Error(w, "permission denied: open the URL cuprof view printed (it carries the token this server needs)", http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// Wait blocks until the server stops, returning why.
func (s *Server) Wait() error {
	err := <-s.done
	s.done <- err
	return err
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, f := range s.cleanup {
		f()
	}
	s.cleanup = nil
	return s.srv.Shutdown(ctx)
}

// withheld lists the driver's pages cuprof does not serve, and why.
var withheld = map[string]string{
	"/source":       "cuprof view has no source view: a trace carries no source files, and cuprof opens none on its behalf",
	"/disasm":       "cuprof view has no disassembly: cuprof opens no binary a trace names",
	"/saveconfig":   "cuprof view does not save pprof settings",
	"/deleteconfig": "cuprof view does not save pprof settings",
}

// refuse answers every request with 404 and why.
func refuse(why string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, why, http.StatusNotFound)
	})
}

// localOnly refuses clients that are not on this host, as pprof's own
// server does when it listens on a loopback address, and requests whose
// Host header names anything but this host's loopback addresses or
// localhost with the server's port: a browser that resolved another site's
// name to 127.0.0.1 (DNS rebinding) sends that name.
func localOnly(port string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			http.Error(w, "permission denied: the pprof UI serves this host only", http.StatusForbidden)
			return
		}
		if !localHost(r.Host) {
			http.Error(w, fmt.Sprintf("permission denied: Host %q is not this server; open http://127.0.0.1:%s/", r.Host, port), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// localHost reports whether a Host header names this host's loopback
// interface ("localhost", 127.0.0.0/8 or [::1]), with any port: through an
// SSH tunnel (ssh -L 9000:127.0.0.1:PORT) the browser names its own end.
func localHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fetcher hands the driver the one profile, whatever source it names.
type fetcher struct{ p *profile.Profile }

var _ driver.Fetcher = fetcher{}

// Fetch returns a copy of the profile (the driver changes what it fetches)
// and no source URL: a profile with one counts as fetched remotely, and the
// driver saves a copy of those under ~/pprof.
func (f fetcher) Fetch(string, time.Duration, time.Duration) (*profile.Profile, string, error) {
	return f.p.Copy(), "", nil
}

type noSymbolizer struct{}

var _ driver.Symbolizer = noSymbolizer{}

// Symbolize does nothing: cuprof profiles come symbolized from the trace.
func (noSymbolizer) Symbolize(string, driver.MappingSources, *profile.Profile) error { return nil }

type noObjTool struct{}

var _ driver.ObjTool = noObjTool{}

var errNoObj = errors.New("cuprof does not open the traced program's binaries")

// Open refuses: the traced program's binaries are not read.
func (noObjTool) Open(string, uint64, uint64, uint64, string) (driver.ObjFile, error) {
	return nil, errNoObj
}

// Disasm refuses: the traced program's binaries are not read.
func (noObjTool) Disasm(string, uint64, uint64, bool) ([]driver.Inst, error) { return nil, errNoObj }

// ui routes the driver's messages to a writer and never reads input.
type ui struct {
	out io.Writer
}

var _ driver.UI = (*ui)(nil)

// ReadLine reports end of input: the web UI needs none.
func (*ui) ReadLine(string) (string, error) { return "", io.EOF }

// Print writes a message line.
func (u *ui) Print(args ...any) { u.line(fmt.Sprint(args...)) }

// PrintErr writes an error line.
func (u *ui) PrintErr(args ...any) { u.line(fmt.Sprint(args...)) }

func (u *ui) line(s string) {
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	io.WriteString(u.out, s)
}

// IsTerminal reports false: there is no interactive terminal.
func (*ui) IsTerminal() bool { return false }

// WantBrowser reports false: cuprof opens the browser itself, on the URL
// with the token.
func (u *ui) WantBrowser() bool { return false }

// SetAutoComplete does nothing.
func (*ui) SetAutoComplete(func(string) string) {}

// flags is the driver's FlagSet over a fixed argument list.
type flags struct {
	fs   *flag.FlagSet
	args []string
	// usage text the driver adds
	extra []string
}

var _ driver.FlagSet = (*flags)(nil)

func newFlags(args []string) *flags {
	fs := flag.NewFlagSet("pprof", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &flags{fs: fs, args: args}
}

// Bool defines a bool flag.
func (f *flags) Bool(n string, d bool, u string) *bool { return f.fs.Bool(n, d, u) }

// Int defines an int flag.
func (f *flags) Int(n string, d int, u string) *int { return f.fs.Int(n, d, u) }

// Float64 defines a float flag.
func (f *flags) Float64(n string, d float64, u string) *float64 { return f.fs.Float64(n, d, u) }

// String defines a string flag.
func (f *flags) String(n string, d string, u string) *string { return f.fs.String(n, d, u) }

// StringList defines a repeatable string flag.
func (f *flags) StringList(n string, d string, u string) *[]*string {
	l := &stringList{}
	if d != "" {
		l.v = append(l.v, &d)
	}
	f.fs.Var(l, n, u)
	return &l.v
}

// ExtraUsage returns the usage text added with AddExtraUsage.
func (f *flags) ExtraUsage() string { return strings.Join(f.extra, "\n") }

// AddExtraUsage adds usage text.
func (f *flags) AddExtraUsage(eu string) { f.extra = append(f.extra, eu) }

// Parse parses the fixed arguments and returns the sources.
func (f *flags) Parse(usage func()) []string {
	if err := f.fs.Parse(f.args); err != nil {
		usage()
		return nil
	}
	return f.fs.Args()
}

type stringList struct{ v []*string }

func (l *stringList) String() string { return "" }

func (l *stringList) Set(s string) error {
	l.v = append(l.v, &s)
	return nil
}

// validName matches profile names safe to show (used for the UI title).
var validName = regexp.MustCompile(`^\w[\w.\-]*$`)

// ProfileName returns a name for the UI from a file path.
func ProfileName(path string) string {
	i := strings.LastIndexAny(path, `/\`)
	name := path[i+1:]
	if !validName.MatchString(name) {
		return "cuprof"
	}
	return name
}

package pprofui

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// FuzzAccess sends requests with arbitrary Host headers, query tokens,
// Authorization headers and cookies through the view server's checks
// (localOnly around withToken, as Start stacks them): a request is served
// exactly when its Host names this host's loopback at the port and it
// carries the token in one of the three places (the Authorization header
// with or without its "token " scheme), and nothing panics.
func FuzzAccess(f *testing.F) {
	const token, port = "0123456789abcdef0123456789abcdef", "8080"
	f.Add("127.0.0.1:8080", token, "", "")
	f.Add("localhost:8080", "", "token "+token, "")
	f.Add("[::1]:8080", "", "", token)
	f.Add("evil.example:8080", token, "", "")
	f.Add("127.0.0.1:8081", token, "", "")
	f.Add("127.0.0.1:8080", token[:31], "token", token+"x")
	f.Add("LOCALHOST:8080", "%zz", "Bearer "+token, "")
	f.Fuzz(func(t *testing.T, host, query, auth, cookie string) {
		served := false
		h := localOnly(port, withToken(token, port, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served = true })))
		r := httptest.NewRequest("GET", "http://127.0.0.1:8080/ui/?token="+url.QueryEscape(query), nil)
		r.Host = host
		r.RemoteAddr = "127.0.0.1:40000"
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		if cookie != "" {
			r.Header.Set("Cookie", (&http.Cookie{Name: "cuprof-view-" + port, Value: cookie}).String())
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		// The cookie as the browser would send it (Cookie.String drops
		// bytes a cookie cannot hold).
		c, err := r.Cookie("cuprof-view-" + port)
		carries := query == token || auth == token || auth == "token "+token || err == nil && c.Value == token
		if want := localHost(host) && carries; served != want {
			t.Fatalf("host %q query %q auth %q cookie %q: served %v, want %v (status %d)", host, query, auth, cookie, served, want, w.Code)
		}
		if !served && w.Code != http.StatusForbidden {
			t.Fatalf("refused with %d, want 403", w.Code)
		}
	})
}

package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultAddr is where the agent serves its metrics unless configured
// otherwise: loopback only, as the page names jobs and hosts.
const DefaultAddr = "127.0.0.1:9767"

// ContentType is the media type of the text exposition format 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// howToChange is the part of Listen's errors that says how to pick another
// address; it must match the agent's configuration key and flag.
const howToChange = "set metrics_addr in /etc/mpiprobe/config.conf or --metrics-addr"

// Handler returns the HTTP handler of the metrics page. For each GET or
// HEAD request it calls collect and encodes the families with [Encode] and
// maxSeries into a buffer before writing anything, so a scrape gets either
// the whole page or, when Encode fails (a bug of the caller), a 500 with a
// one-line body, the error being logged to log (slog.Default() when nil).
// Other methods get 405. The handler answers whatever path it is mounted
// on.
func Handler(collect func() []Family, maxSeries int, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "metrics: method "+strconv.Quote(r.Method)+" not allowed (use GET or HEAD)", http.StatusMethodNotAllowed)
			return
		}
		var buf bytes.Buffer
		if err := Encode(&buf, collect(), maxSeries); err != nil {
			log.Error("metrics: cannot encode the metrics page", "err", err, "remote", r.RemoteAddr)
			msg := strings.ReplaceAll(err.Error(), "\n", " ")
			http.Error(w, "metrics: cannot encode the metrics page (see the agent's log): "+msg, http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", ContentType)
		h.Set("Content-Length", strconv.Itoa(buf.Len()))
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(buf.Bytes()) // the scraper's problem if it went away
		}
	})
}

// listenError is Listen's error: one line that names the address and says
// what to do, unwrapping to the error of net.Listen.
type listenError struct {
	msg string
	err error
}

func (e *listenError) Error() string { return e.msg }
func (e *listenError) Unwrap() error { return e.err }

// Listen opens a TCP listener on addr (host:port) for [Serve]. Its error
// is one line naming the address and the fix, e.g. "metrics: listen on
// 127.0.0.1:9767: address already in use: another mpiprobe agent or
// service uses the port; set metrics_addr in /etc/mpiprobe/config.conf or
// --metrics-addr"; it wraps the error of [net.Listen], so
// errors.Is(err, syscall.EADDRINUSE) works.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	var (
		errno   syscall.Errno
		addrErr *net.AddrError
		why     string
	)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		why = "address already in use: another mpiprobe agent or service uses the port; " + howToChange
	case errors.Is(err, syscall.EACCES):
		why = "permission denied: ports below 1024 need root or CAP_NET_BIND_SERVICE; " + howToChange + " (e.g. " + DefaultAddr + ")"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		why = "no such address on this host: " + howToChange + " to an address of this host (e.g. " + DefaultAddr + ")"
	case errors.As(err, &addrErr):
		why = addrErr.Err + ": use host:port; " + howToChange + " (e.g. " + DefaultAddr + ")"
	case errors.As(err, &errno):
		why = errno.Error() + ": " + howToChange
	default:
		why = innermost(err) + ": " + howToChange
	}
	return nil, &listenError{msg: "metrics: listen on " + addr + ": " + why, err: err}
}

// innermost returns the message of the innermost error that err wraps,
// without net's "listen tcp ADDR:" prefixes, on one line.
func innermost(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return strings.ReplaceAll(err.Error(), "\n", " ")
		}
		err = next
	}
}

// Server timeouts: scrapers send small requests and read a page that is
// ready when the handler starts writing.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 8 << 10
	shutdownTimeout   = 5 * time.Second
)

// Serve serves h on ln until ctx ends, then shuts the server down
// gracefully, letting scrapes in progress finish (for at most 5 s before
// their connections are closed), and returns nil. It closes ln. It returns
// an error only when serving fails before ctx ends. The server reads
// request headers for at most 5 s and accepts small headers only.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("metrics: serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close() // scrapes that did not finish in time
	}
	<-served // http.ErrServerClosed
	return nil
}

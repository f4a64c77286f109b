package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/exporter-toolkit/web"
)

// DefaultAddr is where the agent serves its metrics unless configured
// otherwise: loopback only, as the page names jobs and hosts.
const DefaultAddr = "127.0.0.1:9767"

// howToChange is the part of Listen's errors that says how to pick another
// address, naming the configuration file the agent read (config, "" when
// it read none); it must match the agent's configuration key and flag.
func howToChange(config string) string {
	if config == "" {
		return "set --metrics-addr (or metrics_addr in a --config file)"
	}
	return "set metrics_addr in " + config + " or --metrics-addr"
}

// BuildInfoName is the gauge, always 1, whose labels version and goversion
// name the build of the running mpiprobe.
const BuildInfoName = "mpiprobe_build_info"

// Version returns the version of the running mpiprobe as the Go toolchain
// recorded it: the module version of a `go install`ed binary, or for a
// build in a checkout "(devel)", followed by the VCS revision when Go
// stamped one ("(devel)-0123456789ab", "+dirty" for uncommitted
// changes); "unknown" without build information.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" {
		return "unknown"
	}
	if bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = "-" + s.Value[:min(12, len(s.Value))]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return bi.Main.Version
	}
	return bi.Main.Version + rev + dirty
}

// NewRegistry returns a registry that holds cs, the Go runtime's
// collector (go_*), this process's collector (process_*) and
// [BuildInfoName].
func NewRegistry(cs ...prometheus.Collector) (*prometheus.Registry, error) {
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        BuildInfoName,
		Help:        "Always 1; the labels name the build of the running mpiprobe.",
		ConstLabels: prometheus.Labels{"version": Version(), "goversion": runtime.Version()},
	})
	build.Set(1)
	reg := prometheus.NewRegistry()
	all := append([]prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		build,
	}, cs...)
	for _, c := range all {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register a collector: %w", err)
		}
	}
	return reg, nil
}

// MaxScrapes is how many scrapes the page is served to at the same time;
// one more that arrives meanwhile gets 503 at once.
const MaxScrapes = 4

// scrapeTimeout is how long a scrape may wait for the page (the agent's
// lock) before it gets a 503; Prometheus gives up after 10 s by default.
const scrapeTimeout = 10 * time.Second

// Handler returns the HTTP handler of the metrics page of reg, for GET
// and HEAD requests; other methods get 405. It serves [MaxScrapes] at a
// time, and a scrape that waits 10 s for the page gets 503. It negotiates the format
// (Prometheus text 0.0.4 or OpenMetrics) and the compression (gzip) with
// the scraper, and adds promhttp_metric_handler_* metrics to reg. When
// gathering reports problems (a collector's sample that could not be
// written), the page is served without the samples concerned and each
// problem is logged once to log (slog.Default() when nil), not at every
// scrape. The handler answers whatever path it is mounted on.
func Handler(reg *prometheus.Registry, log *slog.Logger) http.Handler {
	g := onceGatherer{g: reg, log: newOnceLog(log)}
	h := promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		EnableOpenMetrics:   true,
		Registry:            reg,
		MaxRequestsInFlight: MaxScrapes,
		Timeout:             scrapeTimeout,
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "metrics: method "+strconv.Quote(r.Method)+" not allowed (use GET or HEAD)", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// onceGatherer logs each distinct problem of its Gatherer once and passes
// everything through.
type onceGatherer struct {
	g   prometheus.Gatherer
	log *onceLog
}

func (o onceGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := o.g.Gather()
	var multi prometheus.MultiError
	if !errors.As(err, &multi) && err != nil {
		multi = prometheus.MultiError{err}
	}
	for _, e := range multi {
		o.log.once(e.Error(), "metrics: gathering the page", "err", e)
	}
	return mfs, err
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
// is one line naming the address and the fix, with config the
// configuration file the agent read ("" for none), e.g. "metrics: listen
// on 127.0.0.1:9767: address already in use: another mpiprobe agent or
// service uses the port; set metrics_addr in /etc/mpiprobe/config.conf or
// --metrics-addr"; it wraps the error of [net.Listen], so
// errors.Is(err, syscall.EADDRINUSE) works.
func Listen(addr, config string) (net.Listener, error) {
	howToChange := howToChange(config)
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

// CheckWebConfig reads a web configuration file (the Prometheus
// exporters' --web.config.file: tls_server_config, basic_auth_users with
// bcrypt hashes, http_server_config), with its certificates and keys, and
// returns an error of one line that names the file and what to fix; ""
// means none (plain HTTP, no authentication).
func CheckWebConfig(path string) error {
	if path == "" {
		return nil
	}
	if err := web.Validate(path); err != nil {
		return fmt.Errorf("metrics: web configuration %s: %s: fix the file (format: https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md) or leave --web.config.file out for plain HTTP",
			path, strings.ReplaceAll(err.Error(), "\n", " "))
	}
	return nil
}

// Serve serves h on ln until ctx ends, then shuts the server down
// gracefully, letting scrapes in progress finish (for at most 5 s before
// their connections are closed), and returns nil. It closes ln. It returns
// an error only when serving fails before ctx ends. The server reads
// request headers for at most 5 s and accepts small headers only.
// webConfig, when not "", is a web configuration file ([CheckWebConfig])
// served through github.com/prometheus/exporter-toolkit: TLS, and basic
// authentication whose failures get 401; the file is read again for each
// new connection, so a renewed certificate needs no restart. log receives
// the toolkit's messages.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, webConfig string, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	served := make(chan error, 1)
	go func() { served <- web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &webConfig}, log) }()
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

package policy

import (
	"path"
	"strings"
)

// The class table's refinements for network clients: where curl and wget send and write.

// Network clients.

var curlArgs = argSpec{values: "AbcCdDeEFHKmoPQrTuUwxXYyzt", long: longs("abstract-unix-socket=", "alt-svc=",
	"aws-sigv4=", "cacert=", "capath=", "cert=", "cert-type=", "ciphers=", "config=", "connect-timeout=",
	"connect-to=", "continue-at=", "cookie=", "cookie-jar=", "create-file-mode=", "crlfile=", "curves=", "data=",
	"data-ascii=", "data-binary=", "data-raw=", "data-urlencode=", "delegation=", "dns-interface=",
	"dns-ipv4-addr=", "dns-ipv6-addr=", "dns-servers=", "doh-url=", "dump-header=", "egd-file=", "engine=",
	"etag-compare=", "etag-save=", "expect100-timeout=", "form=", "form-string=", "ftp-account=",
	"ftp-alternative-to-user=", "ftp-method=", "ftp-port=", "ftp-ssl-ccc-mode=", "happy-eyeballs-timeout-ms=",
	"haproxy-clientip=", "header=", "hostpubmd5=", "hostpubsha256=", "hsts=", "interface=", "ipfs-gateway=",
	"json=", "keepalive-time=", "key=", "key-type=", "krb=", "libcurl=", "limit-rate=", "local-port=",
	"login-options=", "mail-auth=", "mail-from=", "mail-rcpt=", "max-filesize=", "max-redirs=", "max-time=",
	"netrc-file=", "noproxy=", "oauth2-bearer=", "output=", "output-dir=", "parallel-max=", "pass=",
	"pinnedpubkey=", "preproxy=", "proto=", "proto-default=", "proto-redir=", "proxy=", "proxy-cacert=",
	"proxy-capath=", "proxy-cert=", "proxy-cert-type=", "proxy-ciphers=", "proxy-crlfile=", "proxy-header=",
	"proxy-key=", "proxy-key-type=", "proxy-pass=", "proxy-pinnedpubkey=", "proxy-service-name=",
	"proxy-tls13-ciphers=", "proxy-tlsauthtype=", "proxy-tlspassword=", "proxy-tlsuser=", "proxy-user=",
	"proxy1.0=", "pubkey=", "quote=", "random-file=", "range=", "rate=", "referer=", "request=",
	"request-target=", "resolve=", "retry=", "retry-delay=", "retry-max-time=", "sasl-authzid=",
	"service-name=", "socks4=", "socks4a=", "socks5=", "socks5-gssapi-service=", "socks5-hostname=",
	"speed-limit=", "speed-time=", "stderr=", "telnet-option=", "tftp-blksize=", "time-cond=", "tls-max=",
	"tls13-ciphers=", "tlsauthtype=", "tlspassword=", "tlsuser=", "trace=", "trace-ascii=", "trace-config=",
	"unix-socket=", "upload-file=", "url=", "url-query=", "user=", "user-agent=", "variable=", "write-out=",
	"remote-name", "remote-name-all", "remote-header-name", "location", "silent", "show-error", "fail",
	"include", "head", "insecure", "verbose", "compressed", "globoff", "get", "next", "create-dirs")}

// refineCurl records the files curl writes (-o, -O, cookie jars, traces)
// and reads (uploads, @file data, config and key files).
func refineCurl(c *classCall) {
	c.f.Network = true
	ws := curlArgs.scan(c.args)
	for _, out := range ws.values("o", "output", "c", "cookie-jar", "D", "dump-header", "trace", "trace-ascii",
		"stderr", "libcurl", "etag-save", "hsts", "alt-svc") {
		if out != "-" {
			c.writes(out)
		}
	}
	c.reads(ws.values("T", "upload-file", "K", "config", "E", "cert", "key", "cacert", "netrc-file",
		"etag-compare", "proxy-cacert", "proxy-cert", "proxy-key")...)
	for _, d := range ws.values("d", "data", "data-ascii", "data-binary", "data-urlencode", "json") {
		if i := strings.IndexByte(d, '@'); i >= 0 && !strings.Contains(d[:i], "=") {
			c.reads(d[i+1:])
		}
	}
	for _, form := range ws.values("F", "form") {
		_, v, _ := strings.Cut(form, "=")
		if strings.HasPrefix(v, "@") || strings.HasPrefix(v, "<") {
			file, _, _ := strings.Cut(v[1:], ";")
			c.reads(file)
		}
	}
	for _, jar := range ws.values("b", "cookie") {
		if !strings.Contains(jar, "=") {
			c.reads(jar)
		}
	}
	if ws.has("O", "remote-name", "remote-name-all") {
		dir := ""
		if d := ws.values("output-dir"); len(d) > 0 {
			dir = d[len(d)-1]
		}
		urls := append(ws.operands(), ws.values("url")...)
		for _, u := range urls {
			if name := urlBase(u); name != "" {
				c.writes(joinDir(dir, name))
			}
		}
	}
}

var wgetArgs = argSpec{values: "aBeiOoPtTwQUlARDIXn", long: longs("output-file=", "append-output=", "execute=",
	"input-file=", "base=", "config=", "tries=", "output-document=", "timeout=", "dns-timeout=",
	"connect-timeout=", "read-timeout=", "wait=", "waitretry=", "quota=", "directory-prefix=", "user-agent=",
	"level=", "accept=", "reject=", "domains=", "exclude-domains=", "include-directories=",
	"exclude-directories=", "post-data=", "post-file=", "body-data=", "body-file=", "method=", "header=",
	"load-cookies=", "save-cookies=", "user=", "password=", "http-user=", "http-password=", "ftp-user=",
	"ftp-password=", "proxy-user=", "proxy-password=", "certificate=", "private-key=", "ca-certificate=",
	"ca-directory=", "bind-address=", "limit-rate=", "restrict-file-names=", "referer=", "cut-dirs=",
	"default-page=", "warc-file=", "rejected-log=", "hsts-file=", "recursive", "mirror", "page-requisites",
	"quiet", "verbose", "no-verbose", "continue", "timestamping", "no-clobber", "spider", "background",
	"content-disposition", "no-check-certificate", "force-directories", "no-directories")}

// wgetrcWrites are the wgetrc commands of -e that name a file wget writes,
// with dashes and underscores removed as wget does.
var wgetrcWrites = setOf("outputdocument", "logfile", "dirprefix", "savecookies")

// refineWget records where wget saves: -O, -P, the log and cookie files,
// and otherwise the name it takes from each URL.
func refineWget(c *classCall) {
	c.f.Network = true
	ws := wgetArgs.scan(c.args)
	docs := ws.values("O", "output-document")
	for _, out := range ws.values("o", "output-file", "a", "append-output", "save-cookies", "warc-file", "rejected-log", "hsts-file") {
		c.writes(out)
	}
	for _, cmd := range ws.values("e", "execute") {
		key, value, ok := strings.Cut(cmd, "=")
		key = strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(key))
		if ok && wgetrcWrites[key] {
			value = strings.TrimSpace(value)
			if key == "outputdocument" {
				docs = append(docs, value)
			} else {
				c.writes(value)
			}
		}
	}
	for _, in := range ws.values("i", "input-file") {
		if !strings.Contains(in, "://") {
			c.reads(in)
		}
	}
	c.reads(ws.values("post-file", "body-file", "load-cookies", "config", "certificate", "private-key",
		"ca-certificate")...)
	if len(docs) > 0 {
		for _, d := range docs {
			if d != "-" {
				c.writes(d)
			}
		}
		return
	}
	dir := ""
	if p := ws.values("P", "directory-prefix"); len(p) > 0 {
		dir = p[len(p)-1]
	}
	if ws.has("r", "recursive", "m", "mirror", "p", "page-requisites", "x", "force-directories") {
		if dir == "" {
			dir = "."
		}
		c.writes(dir)
		return
	}
	for _, u := range ws.operands() {
		name := urlBase(u)
		if name == "" {
			name = "index.html"
		}
		c.writes(joinDir(dir, name))
	}
}

// urlBase returns the last segment of a URL's path: the name curl -O and
// wget give the file they save.
func urlBase(u string) string {
	if _, rest, ok := strings.Cut(u, "://"); ok {
		u = rest
		slash := strings.IndexByte(u, '/')
		if slash < 0 {
			return ""
		}
		u = u[slash:]
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	if u == "" || strings.HasSuffix(u, "/") {
		return ""
	}
	return path.Base(u)
}

func joinDir(dir, name string) string {
	if dir == "" {
		return name
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}

// Command leaseholdctl operates a leasehold cluster. Today it makes the
// certificates a secured cluster uses (leaseholdctl certs init).
//
// Exit status: 0 on success, 1 when the work failed, 2 on usage errors.
package main

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/pki"
)

const usage = `Usage: leaseholdctl COMMAND

Commands:
  certs init --dir DIR [--hosts LIST] [--peer-cn NAME] [--admin NAME] [--days N]
        make a CA and the certificates of a secured cluster in DIR:
          ca.crt, ca.key          the CA (--client-ca-file, --peer-trusted-ca-file)
          server.crt, server.key  serving certificate for --hosts (--tls-cert-file)
          peer.crt, peer.key      peer certificate for --hosts, CN --peer-cn
                                  (--peer-cert-file, --peer-cert-allowed-cn)
          admin.crt, admin.key    client certificate of --admin in group system:masters
        Existing files are never overwritten.

  member list                                 NAME, PEER ADDR, API URL, SUFFRAGE, STATE, LAST CONTACT, APPLIED, BEHIND
  member add NAME --peer-addr HOST:PORT [--api-url URL]
                                              as a non-voter; promoted to voter once caught up
  member promote NAME                         a caught-up non-voter, at once
  member remove NAME                          refused if the healthy voters left could not form
                                              a quorum; a leader hands over before it goes
  leader transfer [NAME]                      to NAME, or to the most caught-up voter
  endpoint status                             per node: name, URL, leader?, term, commit, applied,
                                              db size, stored data, version
  endpoint health                             per node: healthy?, took, error
  snapshot save FILE                          a consistent snapshot from the cluster, with a checksum:
                                              received into FILE.part, verified, renamed to FILE
  snapshot inspect FILE                       verifies FILE (checksum, full decode); prints index, term,
                                              size, checksum ok, objects per resource
  snapshot restore FILE --data-dir DIR --name NAME --initial-cluster LIST [--bump-revision N]
                                              offline: the data dir of member NAME of a NEW cluster
                                              holding FILE's objects; every member restores the same
                                              file. Indexes start N (default 1000000000) above FILE's;
                                              a watch or list from an older resourceVersion gets 410
  alarm list                                  the raised alarms, as etcdctl: memberID:<id> alarm:NOSPACE,
                                              one line per member (NOSPACE: a write would have passed
                                              --quota-backend-bytes)
  alarm disarm                                clear them (free space first); prints what it cleared

Cluster commands take --kubeconfig FILE (else $KUBECONFIG) for the API URL and
credentials, or --endpoints URL,... ; -o table|json; --timeout D (default 10s).
Exit status: 0 on success, 1 when the cluster refuses (reason on stderr), 2 on
usage errors.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks errors that exit 2.
type errUsage struct{ msg string }

func (e errUsage) Error() string { return e.msg }

func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout)
	var ue errUsage
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "leaseholdctl: %v\n\n%s", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "leaseholdctl: %v\n", err)
		return 1
	}
}

func dispatch(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errUsage{"no command"}
	}
	switch {
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		return flag.ErrHelp
	case len(args) >= 2 && args[0] == "certs" && args[1] == "init":
		return certsInit(args[2:], stdout)
	case args[0] == "member":
		return memberCmd(args[1:], stdout)
	case args[0] == "leader":
		return leaderCmd(args[1:], stdout)
	case args[0] == "endpoint":
		return endpointCmd(args[1:], stdout)
	case args[0] == "snapshot":
		return snapshotCmd(args[1:], stdout)
	case args[0] == "alarm":
		return alarmCmd(args[1:], stdout)
	}
	return errUsage{fmt.Sprintf("unknown command %q", strings.Join(args, " "))}
}

func certsInit(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("certs init", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", "", "")
	hosts := fs.String("hosts", "127.0.0.1,localhost", "")
	peerCN := fs.String("peer-cn", "leasehold-peer", "")
	admin := fs.String("admin", "admin", "")
	days := fs.Int("days", 365, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage{err.Error()}
	}
	if *dir == "" || fs.NArg() > 0 || *days < 1 || *peerCN == "" || *admin == "" {
		return errUsage{"certs init needs --dir DIR, and --days, --peer-cn and --admin when given must not be empty"}
	}
	var ips []net.IP
	var names []string
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			names = append(names, h)
		}
	}
	if len(ips)+len(names) == 0 {
		return errUsage{"--hosts names no host"}
	}
	files := []string{"ca", "server", "peer", "admin"}
	for _, f := range files {
		for _, ext := range []string{".crt", ".key"} {
			if _, err := os.Stat(filepath.Join(*dir, f+ext)); err == nil {
				return fmt.Errorf("%s already exists; certs init never overwrites", filepath.Join(*dir, f+ext))
			}
		}
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	validity := time.Duration(*days) * 24 * time.Hour
	ca, err := pki.NewCA("leasehold CA", 10*validity)
	if err != nil {
		return err
	}
	if err := pki.WriteFiles(ca.Cert, ca.Key, filepath.Join(*dir, "ca.crt"), filepath.Join(*dir, "ca.key")); err != nil {
		return err
	}
	for _, r := range []struct {
		name string
		req  pki.Request
	}{
		{"server", pki.Request{CommonName: "leasehold", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPs: ips, DNSNames: names}},
		{"peer", pki.Request{CommonName: *peerCN, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, IPs: ips, DNSNames: names}},
		{"admin", pki.Request{CommonName: *admin, Organizations: []string{"system:masters"}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}},
	} {
		r.req.Validity = validity
		cert, key, err := ca.Issue(r.req)
		if err != nil {
			return fmt.Errorf("%s certificate: %w", r.name, err)
		}
		if err := pki.WriteFiles(cert, key, filepath.Join(*dir, r.name+".crt"), filepath.Join(*dir, r.name+".key")); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote ca, server, peer and admin certificates and keys to %s\n", *dir)
	return nil
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"

	"github.com/leasehold/leasehold/cluster"
)

// alarmList is the answer of /cluster/alarms and /cluster/alarms/disarm.
type alarmList struct {
	Alarms []cluster.Alarm `json:"alarms"`
}

// alarmCmd lists or disarms the cluster's alarms (the storage quota's
// NOSPACE), as etcdctl alarm list and alarm disarm do, printing each as
// etcdctl does: "memberID:<decimal id> alarm:NOSPACE".
func alarmCmd(args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "disarm") {
		return errUsage{"alarm needs list or disarm"}
	}
	fs := flag.NewFlagSet("alarm "+args[0], flag.ContinueOnError)
	g := addGlobals(fs)
	if err := parse(fs, g, args[1:], 0); err != nil {
		return err
	}
	c, err := newAPIClient(g)
	if err != nil {
		return err
	}
	method, path := http.MethodGet, "/cluster/alarms"
	if args[0] == "disarm" {
		method, path = http.MethodPost, "/cluster/alarms/disarm"
	}
	var al alarmList
	err = c.first(context.Background(), func(ctx context.Context, e string) error {
		return c.call(ctx, method, e, path, nil, &al)
	})
	if err != nil {
		return err
	}
	if al.Alarms == nil {
		al.Alarms = []cluster.Alarm{}
	}
	if g.output == "json" {
		return printJSON(stdout, al)
	}
	for _, a := range al.Alarms {
		fmt.Fprintf(stdout, "memberID:%d alarm:%s\n", a.MemberID, a.Alarm)
	}
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/internal/testcluster"
)

// TestAlarmListDisarm: a write past a small quota raises NOSPACE; alarm
// list shows it on every node in etcdctl's format, one line per member;
// alarm disarm clears it and prints what it cleared.
func TestAlarmListDisarm(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Cluster: func(_ string, cfg *cluster.Config) {
		cfg.QuotaBackendBytes = 4 << 10
	}})
	ctx := context.Background()
	if !testcluster.WaitFor(ctx, 15*time.Second, func() bool {
		for _, n := range c.Nodes {
			if n.Raft().FeatureLevel() < fsm.MaxFeatureLevel {
				return false
			}
		}
		return true
	}) {
		t.Fatal("feature level not raised")
	}
	leases := c.Client(c.Leader(), true).CoordinationV1().Leases("default")
	big := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "big", Annotations: map[string]string{"a": strings.Repeat("x", 8<<10)}}}
	if _, err := leases.Create(ctx, big, metav1.CreateOptions{}); err == nil {
		t.Fatal("a Lease twice the quota was stored")
	}

	line := regexp.MustCompile(`^memberID:\d+ alarm:NOSPACE$`)
	listed := func(i int) (string, bool) {
		code, out, errOut := ctl("alarm", "list", "--endpoints", c.Nodes[i].URL())
		if code != 0 {
			t.Fatalf("alarm list: exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		ok := len(lines) == 3
		for _, l := range lines {
			ok = ok && line.MatchString(l)
		}
		return out, ok
	}
	for i := range c.Nodes {
		if !testcluster.WaitFor(ctx, 10*time.Second, func() bool { _, ok := listed(i); return ok }) {
			out, _ := listed(i)
			t.Fatalf("alarm list on node %d printed %q, want a NOSPACE line per member", i, out)
		}
	}
	code, out, _ := ctl("alarm", "list", "-o", "json", "--endpoints", c.Nodes[0].URL())
	var al alarmList
	if err := json.Unmarshal([]byte(out), &al); code != 0 || err != nil || len(al.Alarms) != 3 || al.Alarms[0].Alarm != "NOSPACE" || al.Alarms[0].MemberID != cluster.MemberID(al.Alarms[0].Name) {
		t.Fatalf("alarm list -o json: exit %d, %v: %s", code, err, out)
	}
	code, out, _ = ctl("endpoint", "status", "-o", "json", "--endpoints", c.Nodes[0].URL())
	if code != 0 || !strings.Contains(out, `"storedBytes"`) {
		t.Errorf("endpoint status: exit %d: %s", code, out)
	}

	code, out, errOut := ctl("alarm", "disarm", "--endpoints", c.Nodes[c.Follower()].URL())
	if code != 0 || strings.Count(out, "alarm:NOSPACE") != 3 {
		t.Fatalf("alarm disarm: exit %d, %q %q", code, out, errOut)
	}
	for i := range c.Nodes {
		if !testcluster.WaitFor(ctx, 10*time.Second, func() bool { out, _ := listed(i); return out == "" }) {
			out, _ := listed(i)
			t.Fatalf("alarm list on node %d after disarm: %q", i, out)
		}
	}
	// Nothing to disarm: nothing printed, success.
	if code, out, errOut := ctl("alarm", "disarm", "--endpoints", c.Nodes[0].URL()); code != 0 || out != "" {
		t.Errorf("second disarm: exit %d, %q %q", code, out, errOut)
	}
	small := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "small"}}
	if _, err := leases.Create(ctx, small, metav1.CreateOptions{}); err != nil {
		t.Errorf("create under the quota after disarm: %v", err)
	}
}

func TestAlarmUsage(t *testing.T) {
	for _, args := range [][]string{{"alarm"}, {"alarm", "frob"}, {"alarm", "list", "extra", "--endpoints", "http://127.0.0.1:1"}} {
		if code, _, errOut := ctl(args...); code != 2 || errOut == "" {
			t.Errorf("%q: exit %d, %q", args, code, errOut)
		}
	}
}

package etcdconformance

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/features"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// suite is one storagetesting function, called as etcd3's store_test.go and
// watcher_test.go (k8s.io/apiserver v0.36.6) call it against their embedded
// etcd.
type suite struct {
	// name is the storagetesting function (scripts/conformance.sh's RUN
	// matches it).
	name string
	// compacts: the suite compacts the server, so it runs after all that do
	// not (RunWatchSemantics watches from resourceVersion 1).
	compacts bool
	// gates are set for the suite as etcd3's test of it sets them.
	gates map[featuregate.Feature]bool
	run   func(ctx context.Context, t *testing.T, f *fixture)
	// variants, when set, replace run: etcd3 calls the function more than
	// once, each time on a fresh store.
	variants []variant
}

type variant struct {
	name  string
	gates map[featuregate.Feature]bool
	run   func(ctx context.Context, t *testing.T, f *fixture)
}

// suites lists every storagetesting suite that etcd3's tests run, in their
// order; TestStorage moves the compacting ones to the end. README.md has
// the same list as a table, and TestREADME keeps the two in step.
var suites = []suite{
	// store_test.go
	{name: "RunTestCreate", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestCreate(ctx, t, f.store, f.checkStored)
	}},
	{name: "RunTestCreateWithTTL", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestCreateWithTTL(ctx, t, f.store)
	}},
	{name: "RunTestCreateWithKeyExist", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestCreateWithKeyExist(ctx, t, f.store)
	}},
	{name: "RunTestGet", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestGet(ctx, t, f.store)
	}},
	{name: "RunTestUnconditionalDelete", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestUnconditionalDelete(ctx, t, f.store)
	}},
	{name: "RunTestConditionalDelete", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestConditionalDelete(ctx, t, f.store)
	}},
	{name: "RunTestDeleteWithSuggestion", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestDeleteWithSuggestion(ctx, t, f.store)
	}},
	{name: "RunTestDeleteWithSuggestionAndConflict", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestDeleteWithSuggestionAndConflict(ctx, t, f.store)
	}},
	{name: "RunTestDeleteWithSuggestionOfDeletedObject", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestDeleteWithSuggestionOfDeletedObject(ctx, t, f.store)
	}},
	{name: "RunTestValidateDeletionWithSuggestion", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestValidateDeletionWithSuggestion(ctx, t, f.store)
	}},
	{name: "RunTestValidateDeletionWithOnlySuggestionValid", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestValidateDeletionWithOnlySuggestionValid(ctx, t, f.store)
	}},
	{name: "RunTestDeleteWithConflict", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestDeleteWithConflict(ctx, t, f.store)
	}},
	{name: "RunTestPreconditionalDeleteWithSuggestion", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestPreconditionalDeleteWithSuggestion(ctx, t, f.store)
	}},
	{name: "RunTestPreconditionalDeleteWithOnlySuggestionPass", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestPreconditionalDeleteWithOnlySuggestionPass(ctx, t, f.store)
	}},
	{name: "RunTestListPaging", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestListPaging(ctx, t, f.store)
	}},
	{name: "RunTestGetListNonRecursive", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestGetListNonRecursive(ctx, t, f.increaseRV, f.store)
	}},
	{name: "RunTestGetListRecursivePrefix", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestGetListRecursivePrefix(ctx, t, f.store)
	}},
	{name: "RunTestKeySchema", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestKeySchema(ctx, t, f.store)
	}},
	{name: "RunTestGuaranteedUpdate", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestGuaranteedUpdate(ctx, t, f.swappable(), f.checkStored)
	}},
	{name: "RunTestGuaranteedUpdateWithTTL", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestGuaranteedUpdateWithTTL(ctx, t, f.store)
	}},
	{name: "RunTestGuaranteedUpdateChecksStoredData", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestGuaranteedUpdateChecksStoredData(ctx, t, f.swappable())
	}},
	{name: "RunTestGuaranteedUpdateWithConflict", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestGuaranteedUpdateWithConflict(ctx, t, f.store)
	}},
	{name: "RunTestGuaranteedUpdateWithSuggestionAndConflict", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestGuaranteedUpdateWithSuggestionAndConflict(ctx, t, f.store)
	}},
	{name: "RunTestTransformationFailure", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestTransformationFailure(ctx, t, f.swappable())
	}},
	{name: "RunTestList", compacts: true, run: func(ctx context.Context, t *testing.T, f *fixture) {
		// watchCacheEnabled=false: the recorder's lists are not compared.
		storagetesting.RunTestList(ctx, t, f.store, f.compact, false, f.client.Kubernetes.(*storagetesting.KubernetesRecorder))
	}},
	{name: "RunTestConsistentList", run: func(ctx context.Context, t *testing.T, f *fixture) {
		// cacheEnabled=false, consistentReadsSupported=true, listFromCacheSnapshot=false.
		storagetesting.RunTestConsistentList(ctx, t, f.store, f.increaseRV, false, true, false)
	}},
	{
		name:     "RunTestCompactRevision",
		compacts: true,
		// The store must see compactions made by others: its compactor
		// watches compact_rev_key only with ListFromCacheSnapshot.
		gates: map[featuregate.Feature]bool{features.ListFromCacheSnapshot: true},
		run: func(ctx context.Context, t *testing.T, f *fixture) {
			storagetesting.RunTestCompactRevision(ctx, t, f.store, f.increaseRV, f.compact)
		},
	},
	{name: "RunTestListContinuation", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestListContinuation(ctx, t, f.store, f.checkCalls)
	}},
	{
		name: "RunTestListPaginationRareObject",
		// etcd3's test turns it off: with it the compactor's read of
		// compact_rev_key would count among the store's Range calls.
		gates: map[featuregate.Feature]bool{features.ListFromCacheSnapshot: false},
		run: func(ctx context.Context, t *testing.T, f *fixture) {
			storagetesting.RunTestListPaginationRareObject(ctx, t, f.store, f.checkCalls)
		},
	},
	{name: "RunTestListContinuationWithFilter", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestListContinuationWithFilter(ctx, t, f.store, f.checkCalls)
	}},
	{name: "RunTestNamespaceScopedList", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestNamespaceScopedList(ctx, t, f.store)
	}},
	{name: "RunTestListInconsistentContinuation", compacts: true, run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestListInconsistentContinuation(ctx, t, f.store, f.compact)
	}},
	{name: "RunTestListResourceVersionMatch", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestListResourceVersionMatch(ctx, t, f.swappable())
	}},
	{name: "RunTestStats", variants: []variant{
		{name: "SizeBasedListCostEstimate=true", run: func(ctx context.Context, t *testing.T, f *fixture) {
			if err := f.store.EnableResourceSizeEstimation(f.keys); err != nil {
				t.Fatal(err)
			}
			storagetesting.RunTestStats(ctx, t, f.store, codec, f.transformer, true)
		}},
		{name: "SizeBasedListCostEstimate=false", run: func(ctx context.Context, t *testing.T, f *fixture) {
			storagetesting.RunTestStats(ctx, t, f.store, codec, f.transformer, false)
		}},
	}},

	// watcher_test.go
	{name: "RunTestWatch", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestWatch(ctx, t, f.store)
	}},
	{name: "RunTestClusterScopedWatch", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestClusterScopedWatch(ctx, t, f.store)
	}},
	{name: "RunTestNamespaceScopedWatch", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestNamespaceScopedWatch(ctx, t, f.store)
	}},
	{name: "RunTestDeleteTriggerWatch", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestDeleteTriggerWatch(ctx, t, f.store)
	}},
	{name: "RunTestWatchFromZero", compacts: true, run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestWatchFromZero(ctx, t, f.store, f.compact)
	}},
	{name: "RunTestWatchFromNonZero", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestWatchFromNonZero(ctx, t, f.store)
	}},
	{name: "RunTestDelayedWatchDelivery", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestDelayedWatchDelivery(ctx, t, f.store)
	}},
	{name: "RunTestWatchError", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestWatchError(ctx, t, f.swappable())
	}},
	{name: "RunTestWatchContextCancel", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestWatchContextCancel(ctx, t, f.store)
	}},
	{name: "RunTestWatcherTimeout", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestWatcherTimeout(ctx, t, f.store)
	}},
	{name: "RunTestWatchDeleteEventObjectHaveLatestRV", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestWatchDeleteEventObjectHaveLatestRV(ctx, t, f.store)
	}},
	{name: "RunTestWatchInitializationSignal", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunTestWatchInitializationSignal(ctx, t, f.store)
	}},
	{name: "RunOptionalTestProgressNotify", run: func(ctx context.Context, t *testing.T, f *fixture) {
		// Needs the server's periodic progress notifications well under the
		// suite's 30s wait: etcd3's test runs its etcd with 1s, and
		// scripts/conformance.sh starts etcd with
		// --watch-progress-notify-interval=1s.
		storagetesting.RunOptionalTestProgressNotify(ctx, t, f.store, f.increaseRV)
	}},
	{
		name:  "RunTestWatchWithUnsafeDelete",
		gates: map[featuregate.Feature]bool{features.AllowUnsafeMalformedObjectDeletion: true},
		run: func(ctx context.Context, t *testing.T, f *fixture) {
			storagetesting.RunTestWatchWithUnsafeDelete(ctx, t, f.swappable())
		},
	},
	{name: "RunTestWatchDispatchBookmarkEvents", run: func(ctx context.Context, t *testing.T, f *fixture) {
		// false: the etcd3 store sends no bookmarks, asked or not.
		storagetesting.RunTestWatchDispatchBookmarkEvents(ctx, t, f.store, false)
	}},
	{name: "RunSendInitialEventsBackwardCompatibility", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunSendInitialEventsBackwardCompatibility(ctx, t, f.store)
	}},
	{name: "RunWatchSemantics", variants: []variant{
		{name: "default", run: func(ctx context.Context, t *testing.T, f *fixture) {
			storagetesting.RunWatchSemantics(ctx, t, f.store)
		}},
		{
			name:  "ConcurrentWatchObjectDecode",
			gates: map[featuregate.Feature]bool{features.ConcurrentWatchObjectDecode: true},
			run: func(ctx context.Context, t *testing.T, f *fixture) {
				storagetesting.RunWatchSemantics(ctx, t, f.store)
			},
		},
	}},
	{name: "RunWatchSemanticInitialEventsExtended", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunWatchSemanticInitialEventsExtended(ctx, t, f.store)
	}},
	{name: "RunWatchListMatchSingle", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunWatchListMatchSingle(ctx, t, f.store)
	}},
	{name: "RunWatchErrorIsBlockingFurtherEvents", run: func(ctx context.Context, t *testing.T, f *fixture) {
		storagetesting.RunWatchErrorIsBlockingFurtherEvents(ctx, t, f.swappable())
	}},
}

// ordered returns the suites with the compacting ones last, each group in
// table order.
func ordered() []suite {
	var first, last []suite
	for _, s := range suites {
		if s.compacts {
			last = append(last, s)
		} else {
			first = append(first, s)
		}
	}
	return append(first, last...)
}

// TestStorage runs every suite against ETCD_CONFORMANCE_ENDPOINTS, one after
// the other (the suites set process-wide feature gates), each on a fresh
// store under a key prefix of its own.
func TestStorage(t *testing.T) {
	tg := loadTarget(t)
	tg.mustReach(t)
	t.Logf("endpoints %v, keys under %s/", tg.endpoints, tg.root)
	tg.noteCompaction(t)
	for _, s := range ordered() {
		t.Run(s.name, func(t *testing.T) {
			setGates(t, s.gates)
			if len(s.variants) == 0 {
				runOn(t, tg, s.run)
				return
			}
			for _, v := range s.variants {
				t.Run(v.name, func(t *testing.T) {
					setGates(t, v.gates)
					runOn(t, tg, v.run)
				})
			}
		})
	}
}

func setGates(t *testing.T, gates map[featuregate.Feature]bool) {
	for g, on := range gates {
		featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, g, on)
	}
}

// runOn runs a suite on a fresh fixture. Its context ends with the test, not
// when run returns: the suites' parallel subtests run after that.
func runOn(t *testing.T, tg *target, run func(context.Context, *testing.T, *fixture)) {
	f := tg.newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
	t.Cleanup(cancel)
	run(ctx, t, f)
}

// TestREADME keeps README.md's table of suites in step with the suites run:
// every suite has a row saying it runs, and every other row says why not.
func TestREADME(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(Run[A-Za-z]+)` \\| (runs|not run) \\|[^|]*\\|([^|]*)\\|$")
	inREADME := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		if _, dup := inREADME[m[1]]; dup {
			t.Errorf("README.md lists %s twice", m[1])
		}
		inREADME[m[1]] = m[2]
		if m[2] == "not run" && strings.TrimSpace(m[3]) == "" {
			t.Errorf("README.md says %s is not run but not why", m[1])
		}
	}
	seen := map[string]bool{}
	for _, s := range suites {
		if seen[s.name] {
			t.Errorf("suite %s is in the table twice", s.name)
		}
		seen[s.name] = true
		if inREADME[s.name] != "runs" {
			t.Errorf("README.md has no row saying %s runs", s.name)
		}
	}
	for name, runs := range inREADME {
		if runs == "runs" && !seen[name] {
			t.Errorf("README.md says %s runs, but it is not in the suites", name)
		}
	}
}

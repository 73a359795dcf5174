// Package dashboards holds leasehold's Grafana dashboard (leasehold.json).
// Its tests keep the dashboard's queries in step with the metrics a node
// exports, so that a renamed metric fails the build instead of leaving an
// empty panel.
package dashboards

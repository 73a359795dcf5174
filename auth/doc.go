// Package auth decides who a request comes from and what it may do, as
// kube-apiserver does: a union of authenticators (client certificates,
// static tokens, service-account JWTs) turns a request into a user.Info, and
// one authorizer chain (system:masters first) judges the request's
// attributes. Both run on the node that received the request.
//
// It uses the light authenticators of k8s.io/apiserver (token file, bearer
// header, x509, union, the authenticated group) and its authorizer
// interfaces, but none of its handler chains: those pull in some 650 more
// packages.
package auth

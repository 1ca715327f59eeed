package main

import (
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	_ "sigs.k8s.io/kwok/pkg/kwok/controllers"
	_ "cloud.google.com/go/container/apiv1"
	_ "cloud.google.com/go/container/apiv1/containerpb"
)

func main() {}

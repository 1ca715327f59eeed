package main

import (
	_ "cloud.google.com/go/container/apiv1"
	_ "github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	_ "github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	_ "github.com/hashicorp/terraform-plugin-framework/providerserver"
	_ "github.com/hashicorp/terraform-plugin-go/tfprotov6"
	_ "github.com/hashicorp/terraform-plugin-log/tflog"
	_ "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	_ "github.com/google/go-cmp/cmp"
	_ "golang.org/x/oauth2/google"
	_ "google.golang.org/api/option"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/component-helpers/scheduling/corev1"
	_ "k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	_ "sigs.k8s.io/yaml"
)

func main() {}

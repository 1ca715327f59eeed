module github.com/olapgke/terraform-provider-olapgke/internal/sandbox/topolvmreal

go 1.26.0

require (
	github.com/topolvm/topolvm v0.41.0
	google.golang.org/grpc v1.81.1
	sigs.k8s.io/yaml v1.6.0
)

require (
	go.opentelemetry.io/otel v1.44.0 // indirect
	go.opentelemetry.io/otel/sdk/metric v1.44.0 // indirect
	go.yaml.in/yaml/v2 v2.4.4 // indirect
	golang.org/x/net v0.55.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
	golang.org/x/text v0.37.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260526163538-3dc84a4a5aaa // indirect
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af // indirect
)

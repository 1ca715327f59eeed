# <configmap-namespace>/<configmap-name>/<class>
terraform import olapgke_topolvm_device_class.ssd topolvm-system/topolvm-lvmd-0/ssd

# or the class name alone, in the chart's ConfigMap topolvm-system/topolvm-lvmd-0 (key lvmd.yaml)
terraform import olapgke_topolvm_device_class.ssd ssd

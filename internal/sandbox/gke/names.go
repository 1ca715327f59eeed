package gke

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// clusterKey names a cluster: projects/P/locations/L/clusters/C.
type clusterKey struct{ Project, Location, Cluster string }

func (k clusterKey) String() string {
	return "projects/" + k.Project + "/locations/" + k.Location + "/clusters/" + k.Cluster
}

// poolKey names a node pool.
type poolKey struct {
	clusterKey
	Pool string
}

func (k poolKey) String() string { return k.clusterKey.String() + "/nodePools/" + k.Pool }

// deprecated carries the pre-v1 "project_id / zone / cluster_id / node_pool_id" request fields.
type deprecated struct{ Project, Zone, Cluster, Pool string }

// parseCluster reads a cluster name (name or parent) or, when it is empty, the deprecated fields.
func parseCluster(name string, d deprecated) (clusterKey, error) {
	if name == "" {
		if d.Project == "" || d.Zone == "" || d.Cluster == "" {
			return clusterKey{}, status.Errorf(codes.InvalidArgument,
				"Invalid request: name must be of the form projects/*/locations/*/clusters/* (or project_id, zone and cluster_id must all be set); got project_id=%q zone=%q cluster_id=%q.",
				d.Project, d.Zone, d.Cluster)
		}
		return clusterKey{d.Project, d.Zone, d.Cluster}, nil
	}
	t := strings.Split(name, "/")
	if len(t) != 6 || t[0] != "projects" || t[2] != "locations" || t[4] != "clusters" || t[1] == "" || t[3] == "" || t[5] == "" {
		return clusterKey{}, status.Errorf(codes.InvalidArgument,
			"Invalid resource name %q: must be of the form projects/*/locations/*/clusters/*.", name)
	}
	return clusterKey{t[1], t[3], t[5]}, nil
}

// parsePool reads a node pool name or, when it is empty, the deprecated fields.
func parsePool(name string, d deprecated) (poolKey, error) {
	if name == "" {
		c, err := parseCluster("", d)
		if err != nil {
			return poolKey{}, err
		}
		if d.Pool == "" {
			return poolKey{}, status.Error(codes.InvalidArgument,
				"Invalid request: name must be of the form projects/*/locations/*/clusters/*/nodePools/* (or node_pool_id must be set).")
		}
		return poolKey{c, d.Pool}, nil
	}
	i := strings.LastIndex(name, "/nodePools/")
	if i < 0 || name[i+len("/nodePools/"):] == "" || strings.Contains(name[i+len("/nodePools/"):], "/") {
		return poolKey{}, status.Errorf(codes.InvalidArgument,
			"Invalid resource name %q: must be of the form projects/*/locations/*/clusters/*/nodePools/*.", name)
	}
	c, err := parseCluster(name[:i], deprecated{})
	if err != nil {
		return poolKey{}, status.Errorf(codes.InvalidArgument,
			"Invalid resource name %q: must be of the form projects/*/locations/*/clusters/*/nodePools/*.", name)
	}
	return poolKey{c, name[i+len("/nodePools/"):]}, nil
}

// parseLocation reads projects/P/locations/L (ListOperations parent) or the deprecated fields.
func parseLocation(parent, project, zone string) (string, string, error) {
	if parent == "" {
		if project == "" || zone == "" {
			return "", "", status.Error(codes.InvalidArgument, "Invalid request: parent must be of the form projects/*/locations/*.")
		}
		return project, zone, nil
	}
	t := strings.Split(parent, "/")
	if len(t) != 4 || t[0] != "projects" || t[2] != "locations" || t[1] == "" || t[3] == "" {
		return "", "", status.Errorf(codes.InvalidArgument, "Invalid resource name %q: must be of the form projects/*/locations/*.", parent)
	}
	return t[1], t[3], nil
}

// parseOperation reads projects/P/locations/L/operations/O or the deprecated fields.
func parseOperation(name, project, zone, id string) (project2, location, op string, err error) {
	if name == "" {
		if project == "" || zone == "" || id == "" {
			return "", "", "", status.Error(codes.InvalidArgument,
				"Invalid request: name must be of the form projects/*/locations/*/operations/*.")
		}
		return project, zone, id, nil
	}
	t := strings.Split(name, "/")
	if len(t) != 6 || t[0] != "projects" || t[2] != "locations" || t[4] != "operations" || t[5] == "" {
		return "", "", "", status.Errorf(codes.InvalidArgument,
			"Invalid resource name %q: must be of the form projects/*/locations/*/operations/*.", name)
	}
	return t[1], t[3], t[5], nil
}

const apiBase = "https://container.googleapis.com/v1/"

func selfLink(path string) string { return apiBase + path }

func instanceGroupURL(project, zone, igm string) string {
	return fmt.Sprintf("https://www.googleapis.com/compute/v1/projects/%s/zones/%s/instanceGroupManagers/%s", project, zone, igm)
}

// regionOf returns the region of a zone ("us-central1-a" -> "us-central1") or the location
// itself when it already is a region.
func regionOf(loc string) string {
	if isZone(loc) {
		return loc[:strings.LastIndex(loc, "-")]
	}
	return loc
}

// isZone says whether a location looks like a zone (region plus "-<letter>").
func isZone(loc string) bool {
	i := strings.LastIndex(loc, "-")
	return i > 0 && len(loc)-i == 2 && loc[i+1] >= 'a' && loc[i+1] <= 'z'
}

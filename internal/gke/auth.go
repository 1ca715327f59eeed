package gke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// Scopes are the OAuth2 scopes olapgke requests: cloud-platform for the GKE API, userinfo.email
// so GKE's API server can map the token to an identity (as gcloud's auth plugin does).
var Scopes = []string{
	"https://www.googleapis.com/auth/cloud-platform",
	"https://www.googleapis.com/auth/userinfo.email",
}

// Auth says where Google credentials come from. At most one of Credentials and AccessToken is
// set; with neither, Application Default Credentials are used (GOOGLE_APPLICATION_CREDENTIALS,
// the gcloud well-known file, the metadata server, or Terraform Cloud dynamic credentials,
// which are an external_account file named by GOOGLE_APPLICATION_CREDENTIALS).
type Auth struct {
	// Credentials is a credentials JSON document or the path of a file holding one.
	Credentials string
	// AccessToken is a static OAuth2 access token.
	AccessToken string
}

// credentialTypes are the JSON credential types accepted from the provider configuration. The
// type is checked before use, as the oauth2 library asks of callers that take credential JSON.
var credentialTypes = map[google.CredentialsType]bool{
	google.ServiceAccount:                true,
	google.AuthorizedUser:                true,
	google.ExternalAccount:               true,
	google.ExternalAccountAuthorizedUser: true,
	google.ImpersonatedServiceAccount:    true,
}

// TokenSource returns a refreshing token source for a (reused by the GKE client and by the
// Kubernetes REST config, so both authenticate as the same identity). Errors never contain
// the credentials or the token.
func TokenSource(ctx context.Context, a Auth) (oauth2.TokenSource, error) {
	switch {
	case a.Credentials != "" && a.AccessToken != "":
		return nil, errors.New("both credentials and access_token are set; set only one")
	case a.AccessToken != "":
		return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: a.AccessToken, TokenType: "Bearer"}), nil
	case a.Credentials != "":
		data, err := credentialsJSON(a.Credentials)
		if err != nil {
			return nil, err
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			return nil, fmt.Errorf("credentials are not valid JSON: %s", jsonErrorWithoutData(err))
		}
		t := google.CredentialsType(head.Type)
		if !credentialTypes[t] {
			return nil, fmt.Errorf("credentials JSON has type %q; want one of service_account, external_account, authorized_user, external_account_authorized_user, impersonated_service_account", head.Type)
		}
		creds, err := google.CredentialsFromJSONWithTypeAndParams(ctx, data, t, google.CredentialsParams{Scopes: Scopes})
		if err != nil {
			return nil, fmt.Errorf("reading %s credentials: %w", t, err)
		}
		return oauth2.ReuseTokenSource(nil, creds.TokenSource), nil
	default:
		creds, err := google.FindDefaultCredentials(ctx, Scopes...)
		if err != nil {
			return nil, fmt.Errorf("finding Application Default Credentials: %w", err)
		}
		return oauth2.ReuseTokenSource(nil, creds.TokenSource), nil
	}
}

// credentialsJSON accepts the JSON itself or a path to it, like the google provider does.
func credentialsJSON(v string) ([]byte, error) {
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		return []byte(v), nil
	}
	data, err := os.ReadFile(v)
	if err != nil {
		// Do not echo v: it may be a mangled secret rather than a path.
		return nil, errors.New("credentials are neither a JSON document nor a readable file path")
	}
	return data, nil
}

func jsonErrorWithoutData(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("syntax error at byte %d", syn.Offset)
	}
	return "unexpected structure"
}

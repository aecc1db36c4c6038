package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
)

// Files the API keeps in its general storage (general_storage_dir), and
// the ACLs HAProxy loaded from files (runtime). Measured on the real API
// v3.4.0 with HAProxy 2.6.12:
//
//   - POST .../storage/general (multipart, the part file_upload, named by
//     its filename): 201 with the file's absolute path ("file"); 409 when
//     it exists. PUT .../storage/general/NAME?skip_reload=true (multipart):
//     204, the file replaced on disk, nothing reloaded, the configuration
//     version unchanged; 404 when missing. DELETE: 204, 404. GET of one:
//     its content (Accept application/octet-stream, or 406). A DELETE of a
//     file haproxy.cfg names is refused (409).
//   - GET .../runtime/acls: every ACL of the running worker, with its id
//     and storage_name (the file's path, for an ACL loaded with -f).
//     GET .../runtime/acls/ID/entries: its entries by id (404 when it has
//     none). PUT .../runtime/acls/FILE/entries, FILE the path (escaped:
//     an id is refused, "Unknown ACL identifier"): replaces every entry at
//     once (prepare, add, commit; 201), no reload.

// GeneralStoragePath is the API's general-use file storage.
const GeneralStoragePath = "/services/haproxy/storage/general"

// StoredFile is a file of the general storage.
type StoredFile struct {
	StorageName string `json:"storage_name"`
	File        string `json:"file"` // absolute path, as HAProxy opens it
}

// RuntimeACL is an ACL of the running worker.
type RuntimeACL struct {
	ID          string `json:"id"`
	StorageName string `json:"storage_name"` // the file's path for an ACL loaded from a file
}

func generalFilePath(name string) string { return GeneralStoragePath + "/" + url.PathEscape(name) }

// GeneralFiles lists the general storage.
func (c *Client) GeneralFiles(ctx context.Context) ([]StoredFile, error) {
	var out []StoredFile
	_, err := c.Do(ctx, http.MethodGet, GeneralStoragePath, nil, nil, &out)
	return out, err
}

// GeneralFile reads one file of the general storage.
func (c *Client) GeneralFile(ctx context.Context, name string) ([]byte, error) {
	data, _, err := c.sendAs(ctx, http.MethodGet, generalFilePath(name), nil, nil, "", "application/octet-stream")
	return data, err
}

// CreateGeneralFile stores a new file; ErrExists when there is one.
func (c *Client) CreateGeneralFile(ctx context.Context, name string, content []byte) (StoredFile, error) {
	body, ctype, err := upload(name, content)
	if err != nil {
		return StoredFile{}, err
	}
	data, _, err := c.sendAs(ctx, http.MethodPost, GeneralStoragePath, nil, body, ctype, "application/json")
	if err != nil {
		return StoredFile{}, err
	}
	var out StoredFile
	if err := json.Unmarshal(data, &out); err != nil {
		return StoredFile{}, fmt.Errorf("dataplane: POST %s: %w", GeneralStoragePath, err)
	}
	return out, nil
}

// ReplaceGeneralFile replaces a stored file on disk without a reload
// (skip_reload): what HAProxy runs is unchanged until it next loads it.
func (c *Client) ReplaceGeneralFile(ctx context.Context, name string, content []byte) error {
	body, ctype, err := upload(name, content)
	if err != nil {
		return err
	}
	_, _, err = c.sendAs(ctx, http.MethodPut, generalFilePath(name), url.Values{"skip_reload": {"true"}}, body, ctype, "application/json")
	return err
}

// DeleteGeneralFile deletes a stored file.
func (c *Client) DeleteGeneralFile(ctx context.Context, name string) error {
	_, err := c.Do(ctx, http.MethodDelete, generalFilePath(name), nil, nil, nil)
	return err
}

// RuntimeACLs lists the running worker's ACLs.
func (c *Client) RuntimeACLs(ctx context.Context) ([]RuntimeACL, error) {
	var out []RuntimeACL
	_, err := c.Do(ctx, http.MethodGet, RuntimePath+"/acls", nil, nil, &out)
	return out, err
}

// RuntimeACLEntries reads the entries of the running ACL id (ErrNotFound
// when it has none, or does not exist).
func (c *Client) RuntimeACLEntries(ctx context.Context, id string) ([]string, error) {
	var out []struct {
		Value string `json:"value"`
	}
	if _, err := c.Do(ctx, http.MethodGet, RuntimePath+"/acls/"+url.PathEscape(id)+"/entries", nil, nil, &out); err != nil {
		return nil, err
	}
	vals := make([]string, len(out))
	for i, e := range out {
		vals[i] = e.Value
	}
	return vals, nil
}

// ReplaceRuntimeACL gives the running ACL loaded from file exactly these
// entries, in one atomic step (prepare, add, commit): until it ends the
// old entries are in force, then the new ones. No reload.
func (c *Client) ReplaceRuntimeACL(ctx context.Context, file string, values []string) error {
	body := make([]map[string]string, len(values))
	for i, v := range values {
		body[i] = map[string]string{"value": v}
	}
	_, err := c.Do(ctx, http.MethodPut, RuntimePath+"/acls/"+url.PathEscape(file)+"/entries", nil, body, nil)
	return err
}

// upload is a multipart body with the file in the part file_upload.
func upload(name string, content []byte) ([]byte, string, error) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	part, err := mw.CreateFormFile("file_upload", name)
	if err == nil {
		_, err = part.Write(content)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return nil, "", fmt.Errorf("dataplane: file %s: %w", name, err)
	}
	return b.Bytes(), mw.FormDataContentType(), nil
}

// Command sbom writes an SPDX 2.3 JSON software bill of materials for a Go
// binary from the module list the Go toolchain embeds in it (what
// `go version -m` prints: debug/buildinfo), so the release needs no tool
// beyond Go.
//
//	go run ./tests/release/sbom -o dist/gpu-exporter.spdx.json dist/gpu-exporter
package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// document is the subset of SPDX 2.3's JSON schema this tool fills.
type document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      creationInfo   `json:"creationInfo"`
	Packages          []pkg          `json:"packages"`
	Relationships     []relationship `json:"relationships"`
}

type creationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type pkg struct {
	Name             string        `json:"name"`
	SPDXID           string        `json:"SPDXID"`
	VersionInfo      string        `json:"versionInfo,omitempty"`
	DownloadLocation string        `json:"downloadLocation"`
	FilesAnalyzed    bool          `json:"filesAnalyzed"`
	Checksums        []checksum    `json:"checksums,omitempty"`
	ExternalRefs     []externalRef `json:"externalRefs,omitempty"`
	Comment          string        `json:"comment,omitempty"`
}

type checksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type externalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type relationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

func main() {
	out := flag.String("o", "", "output file (default: stdout)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: sbom [-o file] <go binary>")
		os.Exit(2)
	}
	doc, err := build(flag.Arg(0), time.Now().UTC())
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
	data = append(data, '\n')
	if *out == "" {
		_, err = os.Stdout.Write(data)
	} else {
		err = os.WriteFile(*out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

// build reads the binary's embedded build information and describes the
// binary, its main module, every dependency module (with go.sum's hash in a
// comment) and the Go toolchain as SPDX packages.
func build(path string, now time.Time) (*document, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading build information of %s: %w", path, err)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(path)
	doc := &document{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              name,
		DocumentNamespace: fmt.Sprintf("https://github.com/gpu-exporter/gpu-exporter/spdx/%s-%s", name, sum[:16]),
		CreationInfo: creationInfo{
			Created:  now.Format(time.RFC3339),
			Creators: []string{"Tool: gpu-exporter tests/release/sbom (debug/buildinfo)"},
		},
	}
	var settings []string
	for _, s := range info.Settings {
		settings = append(settings, s.Key+"="+s.Value)
	}
	bin := pkg{
		Name: name, SPDXID: "SPDXRef-Binary", VersionInfo: info.Main.Version,
		DownloadLocation: "NOASSERTION", Checksums: []checksum{{"SHA256", sum}},
		Comment: "build settings: " + strings.Join(settings, " "),
	}
	doc.Packages = append(doc.Packages, bin)
	doc.Relationships = append(doc.Relationships, relationship{"SPDXRef-DOCUMENT", "DESCRIBES", "SPDXRef-Binary"})
	add := func(id, modPath, version, hash, comment string) {
		p := pkg{
			Name: modPath, SPDXID: id, VersionInfo: version, DownloadLocation: "NOASSERTION", Comment: comment,
			ExternalRefs: []externalRef{{"PACKAGE-MANAGER", "purl", purl(modPath, version)}},
		}
		if hash != "" {
			p.Comment = strings.TrimSpace(p.Comment + " go.sum " + hash)
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, relationship{"SPDXRef-Binary", "CONTAINS", id})
	}
	add("SPDXRef-Main", info.Main.Path, info.Main.Version, info.Main.Sum, "main module")
	for i, d := range info.Deps {
		m := d
		comment := ""
		if d.Replace != nil {
			comment = fmt.Sprintf("replaces %s %s", d.Path, d.Version)
			m = d.Replace
		}
		add(fmt.Sprintf("SPDXRef-Module-%d", i), m.Path, m.Version, m.Sum, comment)
	}
	doc.Packages = append(doc.Packages, pkg{
		Name: "go", SPDXID: "SPDXRef-Go", VersionInfo: strings.TrimPrefix(info.GoVersion, "go"),
		DownloadLocation: "https://go.dev/dl/", Comment: "toolchain and standard library",
		ExternalRefs: []externalRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/stdlib@" + info.GoVersion}},
	})
	doc.Relationships = append(doc.Relationships, relationship{"SPDXRef-Binary", "CONTAINS", "SPDXRef-Go"})
	return doc, nil
}

// purl is the package URL of a Go module (purl-spec, type golang).
func purl(path, version string) string {
	p := "pkg:golang/" + path
	if version != "" && version != "(devel)" {
		p += "@" + version
	}
	return p
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

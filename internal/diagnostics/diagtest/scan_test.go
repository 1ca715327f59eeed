package diagtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every diagnostic the provider emits is built by internal/diagnostics (so its detail goes
// through Wrap, which TestWrapFitsEightyColumns proves fits 80 columns whatever the text), and
// every summary written in the code is Title Case. The scan reads the provider's Go source (the
// sandbox is a separate module and emits no Terraform diagnostics).
func TestEveryDiagnosticGoesThroughTheHelper(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..") // internal/
	fset := token.NewFileSet()
	summaries := 0
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); n == "sandbox" || n == "testdata" || n == "tools" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		inHelper := filepath.Dir(p) == filepath.Join(root, "diagnostics")
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, _ := sel.X.(*ast.Ident)
				name := sel.Sel.Name
				switch {
				case !inHelper && (name == "AddError" || name == "AddWarning" || name == "AddAttributeError" || name == "AddAttributeWarning"):
					t.Errorf("%s: %s bypasses internal/diagnostics (its detail is not laid out for 80 columns)", fset.Position(n.Pos()), name)
				case !inHelper && pkg != nil && pkg.Name == "diag" && strings.HasPrefix(name, "New") && strings.HasSuffix(name, "Diagnostic"):
					t.Errorf("%s: diag.%s bypasses internal/diagnostics", fset.Position(n.Pos()), name)
				case pkg != nil && pkg.Name == "diagnostics":
					arg := map[string]int{"Error": 0, "Warning": 0, "ProviderBug": 0, "AttributeError": 1, "AttributeWarning": 1}
					if i, ok := arg[name]; ok && len(n.Args) > i {
						summaries += checkSummary(t, fset, n.Args[i])
					}
				}
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok && strings.Contains(strings.ToLower(id.Name), "summary") && i < len(n.Rhs) {
						summaries += checkSummary(t, fset, n.Rhs[i])
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if summaries < 150 { // about 164 call sites at the time of writing: the scan must see them
		t.Errorf("found only %d summaries: the scan is not reading the provider's source", summaries)
	}
}

func checkSummary(t *testing.T, fset *token.FileSet, e ast.Expr) int {
	t.Helper()
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return 0
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Errorf("%s: %v", fset.Position(lit.Pos()), err)
		return 0
	}
	if err := TitleCase(s); err != nil {
		t.Errorf("%s: %v", fset.Position(lit.Pos()), err)
	}
	return 1
}

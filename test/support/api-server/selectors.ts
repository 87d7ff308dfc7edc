/**
 * Label and field selector strings as the API server parses them (`a=b,c!=d,e in (f,g),!h`).
 */
type Requirement = (labels: Record<string, string>) => boolean;

function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) parts.push(cur);
  return parts.map((p) => p.trim()).filter(Boolean);
}

function parseRequirement(expr: string): Requirement {
  let m = /^(\S+)\s+(in|notin)\s+\((.*)\)$/.exec(expr);
  if (m) {
    const [, key, op, list] = m;
    const values = new Set(list.split(',').map((v) => v.trim()));
    return op === 'in' ? (l) => key in l && values.has(l[key]) : (l) => !(key in l) || !values.has(l[key]);
  }
  m = /^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(expr);
  if (m) {
    const [, key, op, value] = m;
    return op === '!=' ? (l) => l[key] !== value : (l) => l[key] === value;
  }
  if (expr.startsWith('!')) {
    const key = expr.slice(1).trim();
    return (l) => !(key in l);
  }
  if (/^\S+$/.test(expr)) return (l) => expr in l;
  throw new Error(`unable to parse requirement: ${expr}`);
}

/** Compiles a label selector string; an empty or missing selector matches everything. */
export function compileLabelSelector(selector: string | undefined): (labels: Record<string, string> | undefined) => boolean {
  if (!selector) return () => true;
  const reqs = splitTopLevel(selector).map(parseRequirement);
  return (labels) => reqs.every((r) => r(labels ?? {}));
}

/** Field paths the double supports in field selectors, like the real server for pods. */
function fieldValue(obj: Record<string, any>, path: string): string {
  const v = path.split('.').reduce<any>((o, k) => (o == null ? undefined : o[k]), obj);
  return v == null ? '' : String(v);
}

/** Compiles a field selector (`metadata.name=x,spec.nodeName!=`). */
export function compileFieldSelector(selector: string | undefined): (obj: Record<string, any>) => boolean {
  if (!selector) return () => true;
  const reqs = splitTopLevel(selector).map((expr) => {
    const m = /^([\w.]+)\s*(==|=|!=)\s*(.*)$/.exec(expr);
    if (!m) throw new Error(`unable to parse field selector: ${expr}`);
    const [, path, op, value] = m;
    return op === '!='
      ? (o: Record<string, any>) => fieldValue(o, path) !== value
      : (o: Record<string, any>) => fieldValue(o, path) === value;
  });
  return (obj) => reqs.every((r) => r(obj));
}

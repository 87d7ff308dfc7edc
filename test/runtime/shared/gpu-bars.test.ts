import { escapeXml, FREE_COLOUR, gpuBarsSvg, GpuBar, namespaceColour } from '../../../lib/runtime/shared/gpu-bars';

const GI = 2 ** 30;
const bar = (shares: GpuBar['shares'], name = 'g-0'): GpuBar => ({
  name,
  node: 'n-0',
  pool: 'p',
  model: 'A100',
  tflops: 300,
  vram: 80 * GI,
  shares,
});
const share = (pod: string, tflops: number, namespace = 'ml') => ({
  pod,
  namespace,
  tflopsRequest: tflops,
  tflopsLimit: tflops,
  vramRequest: 10 * GI,
  vramLimit: 10 * GI,
});

/** The rectangles of the TFLOPS bars: x, width and fill, in drawing order. */
const rects = (svg: string) =>
  [...svg.matchAll(/<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="18" fill="([^"]+)"/g)].map((m) => ({
    x: Number(m[1]),
    w: Number(m[2]),
    fill: m[3],
  }));

describe('GPU bars', () => {
  test('each share is a segment as wide as its request, coloured by namespace, then the free room', () => {
    const svg = gpuBarsSvg([bar([share('a', 150), share('b', 75, 'other')])], { width: 830 });
    // The bar is 830 - 230 - 12 = 588 px wide: 150/300 and 75/300 of it, then the rest free.
    expect(rects(svg)).toEqual([
      { x: 230, w: 294, fill: namespaceColour('ml') },
      { x: 524, w: 147, fill: namespaceColour('other') },
      { x: 671, w: 147, fill: FREE_COLOUR },
    ]);
    expect(svg).toContain('<title>ml/a: 150 TFLOPS requested, limit 150</title>');
    expect(svg).toContain('<title>free: 75 of 300 TFLOPS</title>');
    expect(svg).toContain('>pool p<');
    expect(svg).toContain('>node n-0<');
  });

  test('names from the cluster are escaped; labels that do not fit are cut or left out', () => {
    const svg = gpuBarsSvg([bar([share('<script>&"x\'', 150), share('a-very-long-pod-name-that-cannot-fit', 3)])]);
    expect(svg).not.toContain('<script>');
    expect(svg).toContain('&lt;script&gt;&amp;&quot;x&#39;');
    expect(svg).not.toContain('>a-very-long-pod-name-that-cannot-fit<');
    expect(escapeXml('a<b')).toBe('a&lt;b');
  });

  test('namespaces keep their colour from one picture to the next', () => {
    expect(namespaceColour('ml')).toBe(namespaceColour('ml'));
    expect(new Set(['a', 'b', 'c', 'd', 'e', 'f'].map(namespaceColour)).size).toBeGreaterThan(2);
  });
});

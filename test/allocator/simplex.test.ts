import { maximise } from '../../lib/allocator/simplex';

const rows = (...rs: number[][]) => rs.map((r) => Float64Array.from(r));

describe('maximise', () => {
  test('finds the optimum at a vertex: max 3x + 2y, x + y <= 4, x + 3y <= 6, x <= 3', () => {
    expect(maximise(rows([1, 1], [1, 3], [1, 0]), [4, 6, 3], [3, 2])).toBeCloseTo(11, 9);
  });

  test('a degenerate programme (a zero right-hand side) still ends at the optimum', () => {
    expect(maximise(rows([1, -1], [1, 1], [0, 1]), [0, 2, 5], [1, 1])).toBeCloseTo(2, 9);
  });

  test('an objective no row limits is refused, naming the column', () => {
    expect(() => maximise(rows([1, -1]), [1], [0, 1])).toThrow('simplex: column 1 is unbounded');
  });
});

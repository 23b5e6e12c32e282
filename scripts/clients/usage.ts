// Type-checked (`tsc --strict --noEmit`, tsconfig.json) against the types openapi-typescript
// generates from the live document (make clients): a client of the stories, the front and the
// subscribe routes, written the way an integrator would with plain fetch.
import type { components, operations, paths } from "../../build/clients/typescript/paper-desk";

type StoryList = components["schemas"]["StoryListOut"];
type Story = components["schemas"]["StoryOut"];
type Problem = components["schemas"]["Problem"];
type SubscribeBody = components["schemas"]["SubscribeIn"];
type ListQuery = NonNullable<operations["listStories"]["parameters"]["query"]>;

// Every documented path, so a typo in a route is a compile error.
type Path = keyof paths;
const storiesPath: Path = "/api/v1/stories";
const storyPath: Path = "/api/v1/stories/{id}";

async function getJson<T>(base: string, path: string, key?: string): Promise<T | Problem> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (key !== undefined) headers["Authorization"] = `Bearer ${key}`; // optional everywhere public
  const response = await fetch(base + path, { headers });
  return (await response.json()) as T | Problem;
}

function isProblem(body: object): body is Problem {
  return "status" in body && "title" in body && "detail" in body;
}

export async function headlines(base: string, query: ListQuery = { limit: 10 }): Promise<string[]> {
  const body = await getJson<StoryList>(base, `${storiesPath}?limit=${query.limit ?? 50}`);
  if (isProblem(body)) throw new Error(`${body.status} ${body.title}: ${body.detail}`);
  return body.stories.map((row) => `${row.headline} (${row.section})`);
}

export async function story(base: string, id: string, key?: string): Promise<Story> {
  const body = await getJson<Story>(base, storyPath.replace("{id}", encodeURIComponent(id)), key);
  if (isProblem(body)) throw new Error(body.detail);
  const facts: number = body.cited_facts.length;
  return facts >= 0 ? body : body;
}

export const subscribe: SubscribeBody = { email: "reader@example.org", cadence: "daily", cast: true };

// The generated operation types carry the answers by status.
type FrontAnswer = operations["getFront"]["responses"][200]["content"]["application/json"];
export const rails = (front: FrontAnswer): number => front.rails.length;

import { defineConfig } from 'vitepress';
import { sections, sidebar, sidebarLinks } from './sidebar.ts';

const groups = sidebar();

// The documentation site (npm run docs → docs/.vitepress/dist; npm run docs:dev serves it). Everything it
// needs is in node_modules: the local search index (MiniSearch), the theme's fonts; a dead link fails the build.
export default defineConfig({
  title: 'KupenStack',
  description: 'OpenStack as code: a GitOps agent that keeps an OpenStack cloud and its resources equal to a Git repository',
  cleanUrls: true,
  lastUpdated: false,
  ignoreDeadLinks: false,
  srcExclude: ['**/README.md'],
  themeConfig: {
    // Each section's first page: the sections have no index pages of their own.
    nav: sections.flatMap((s, i) => {
      const first = sidebarLinks([groups[i]!])[0];
      return first ? [{ text: s.text, link: first, activeMatch: `^/${s.dir}/` }] : [];
    }),
    sidebar: groups,
    search: { provider: 'local' },
    outline: [2, 3],
  },
});

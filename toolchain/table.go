package toolchain

// The Go module proxy the Go row falls through to when the network is on.
const goProxy = "https://proxy.golang.org,direct"

var (
	npmEnv     = []string{"npm_config_update_notifier=false", "npm_config_fund=false"}
	npmOffline = []string{"npm_config_offline=true"}
	python     = Local{Name: "python", Paths: []string{".venv/bin/python", "venv/bin/python"}, Fallback: "python3"}
	ccache     = Cache{Name: "ccache", Env: "CCACHE_DIR"}
)

// table is every row. Each row is tested: its markers detect it, its
// lockfiles choose its managers, its presets exist in the policy, its
// caches' variables are its toolchain's own.
var table = []Row{
	{
		Name:    "go",
		Markers: []string{"go.mod", "go.work"},
		Managers: []Manager{{
			Name:     "go",
			Programs: []Program{{"go", "golang-go"}},
			Caches: []Cache{
				{Name: "go-build", Env: "GOCACHE"},
				{Name: "go-mod", Env: "GOMODCACHE"},
				// The host's module download cache is a module proxy's
				// layout: served as a file:// proxy, it fills the
				// workspace's own module cache with what the host has
				// fetched and verified before.
				{Name: "go-mod-download", Env: "GOPROXY", Value: "file://{dir}", Online: "file://{dir}," + goProxy,
					Host: []string{"$GOMODCACHE/cache/download", "$GOPATH/pkg/mod/cache/download", "~/go/pkg/mod/cache/download"}},
			},
			Commands: Commands{Install: "go mod download", Build: "go build ./...", Test: "go test ./...", Lint: "go vet ./...", Format: "gofmt -l ."},
			Presets:  []string{"go"},
		}},
	},
	{
		Name:    "node",
		Markers: []string{"package.json"},
		Managers: []Manager{
			{
				Name: "npm", Lockfiles: []string{"package-lock.json", "npm-shrinkwrap.json"},
				Programs:   []Program{{"node", "nodejs"}, {"npm", "npm"}},
				Caches:     []Cache{{Name: "npm", Env: "npm_config_cache"}},
				Env:        npmEnv,
				OfflineEnv: npmOffline,
				Commands:   Commands{Install: "npm ci", Build: "npm run build", Test: "npm test", Lint: "npm run lint"},
				Presets:    []string{"npm"},
			},
			{
				Name: "pnpm", Lockfiles: []string{"pnpm-lock.yaml"},
				Programs: []Program{{"node", "nodejs"}, {"pnpm", ""}},
				// pnpm keeps its store in $PNPM_HOME/store when it is set
				// (npm would warn about a store-dir setting).
				Caches:     []Cache{{Name: "pnpm", Env: "PNPM_HOME"}},
				Env:        npmEnv,
				OfflineEnv: npmOffline,
				Commands:   Commands{Install: "pnpm install --frozen-lockfile", Build: "pnpm run build", Test: "pnpm test", Lint: "pnpm run lint"},
				Presets:    []string{"npm"},
			},
			{
				Name: "yarn", Lockfiles: []string{"yarn.lock"},
				Programs:   []Program{{"node", "nodejs"}, {"yarn", ""}},
				Caches:     []Cache{{Name: "yarn", Env: "YARN_CACHE_FOLDER"}},
				Env:        []string{"YARN_ENABLE_TELEMETRY=0"},
				OfflineEnv: []string{"YARN_ENABLE_NETWORK=0"},
				Commands:   Commands{Install: "yarn install", Build: "yarn run build", Test: "yarn test", Lint: "yarn run lint"},
				Presets:    []string{"npm"},
			},
			{
				Name: "bun", Lockfiles: []string{"bun.lock", "bun.lockb"},
				Programs: []Program{{"bun", ""}},
				Caches:   []Cache{{Name: "bun", Env: "BUN_INSTALL_CACHE_DIR"}},
				Commands: Commands{Install: "bun install --frozen-lockfile", Build: "bun run build", Test: "bun test", Lint: "bun run lint"},
				Presets:  []string{"npm"},
			},
		},
	},
	{
		Name:    "deno",
		Markers: []string{"deno.json", "deno.jsonc"},
		Managers: []Manager{{
			Name: "deno", Lockfiles: []string{"deno.lock"},
			Programs: []Program{{"deno", ""}},
			Caches:   []Cache{{Name: "deno", Env: "DENO_DIR"}},
			Env:      []string{"DENO_NO_UPDATE_CHECK=1"},
			Commands: Commands{Install: "deno install", Build: "deno check .", Test: "deno test", Lint: "deno lint", Format: "deno fmt --check"},
			Presets:  []string{"deno"},
		}},
	},
	{
		Name:    "python",
		Markers: []string{"pyproject.toml", "requirements.txt", "setup.py", "setup.cfg"},
		Managers: []Manager{
			{
				Name:     "pip",
				Programs: []Program{{"python3", "python3"}},
				Caches:   []Cache{{Name: "pip", Env: "PIP_CACHE_DIR"}},
				Env:      []string{"PIP_DISABLE_PIP_VERSION_CHECK=1"},
				// A virtual environment in the workspace is named by
				// path: the sandbox's PATH holds no directory the command
				// can write.
				Locals:   []Local{python},
				Commands: Commands{Install: "{python} -m pip install -r requirements.txt", Test: "{python} -m unittest"},
				Presets:  []string{"pypi"},
			},
			{
				Name: "uv", Lockfiles: []string{"uv.lock"},
				Programs:   []Program{{"uv", ""}},
				Caches:     []Cache{{Name: "uv", Env: "UV_CACHE_DIR"}},
				OfflineEnv: []string{"UV_OFFLINE=1"},
				Commands:   Commands{Install: "uv sync --frozen", Build: "uv build", Test: "uv run pytest", Lint: "uv run ruff check .", Format: "uv run ruff format --check ."},
				Presets:    []string{"pypi"},
			},
			{
				Name: "poetry", Lockfiles: []string{"poetry.lock"},
				Programs: []Program{{"poetry", "python3-poetry"}},
				Caches:   []Cache{{Name: "poetry", Env: "POETRY_CACHE_DIR"}},
				Commands: Commands{Install: "poetry install --no-interaction", Build: "poetry build", Test: "poetry run pytest"},
				Presets:  []string{"pypi"},
			},
		},
	},
	{
		Name:    "rust",
		Markers: []string{"Cargo.toml"},
		Managers: []Manager{{
			Name: "cargo", Lockfiles: []string{"Cargo.lock"},
			Programs: []Program{{"cargo", "cargo"}, {"rustc", "rustc"}},
			// CARGO_HOME holds the registry index, the downloaded crates
			// and git checkouts; target/ stays in the workspace.
			Caches:     []Cache{{Name: "cargo", Env: "CARGO_HOME"}},
			OfflineEnv: []string{"CARGO_NET_OFFLINE=true"},
			Commands:   Commands{Install: "cargo fetch", Build: "cargo build", Test: "cargo test", Lint: "cargo clippy", Format: "cargo fmt --check"},
			Presets:    []string{"crates"},
		}},
	},
	{
		Name:    "java",
		Markers: []string{"pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"},
		Managers: []Manager{
			{
				Name: "maven", Lockfiles: []string{"pom.xml"},
				Programs: []Program{{"mvn", "maven"}, {"java", "default-jdk"}},
				// Maven reads its local repository from a system property,
				// which MAVEN_OPTS gives the JVM.
				Caches: []Cache{{Name: "maven", Env: "MAVEN_OPTS", Value: "-Dmaven.repo.local={dir}"}},
				// Read by Maven 3.9 and later.
				OfflineEnv: []string{"MAVEN_ARGS=--offline"},
				Commands:   Commands{Install: "mvn -B dependency:go-offline", Build: "mvn -B package -DskipTests", Test: "mvn -B test", Lint: "mvn -B verify -DskipTests"},
				Presets:    []string{"maven"},
			},
			{
				Name: "gradle", Lockfiles: []string{"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts", "gradlew"},
				Programs: []Program{{"java", "default-jdk"}},
				Caches: []Cache{
					{Name: "gradle", Env: "GRADLE_USER_HOME"},
					// Gradle reads a shared dependency cache read-only
					// beside its own.
					{Name: "gradle-ro-cache", Env: "GRADLE_RO_DEP_CACHE", Host: []string{"$GRADLE_USER_HOME/caches", "~/.gradle/caches"}},
				},
				Locals:   []Local{{Name: "gradle", Paths: []string{"./gradlew"}, Fallback: "gradle"}},
				Commands: Commands{Install: "{gradle} dependencies", Build: "{gradle} assemble", Test: "{gradle} test", Lint: "{gradle} check -x test"},
				Presets:  []string{"gradle", "maven"},
			},
		},
	},
	{
		Name:    "ruby",
		Markers: []string{"Gemfile", "gems.rb"},
		Managers: []Manager{{
			Name: "bundler", Lockfiles: []string{"Gemfile.lock", "gems.locked"},
			Programs: []Program{{"ruby", "ruby"}, {"bundle", "ruby-bundler"}},
			// The gems a bundle installs: the system's gem directory is
			// read-only in the sandbox.
			Caches:   []Cache{{Name: "bundle", Env: "BUNDLE_PATH"}},
			Commands: Commands{Install: "bundle install", Test: "bundle exec rake test", Lint: "bundle exec rubocop"},
			Presets:  []string{"rubygems"},
		}},
	},
	{
		Name:    "php",
		Markers: []string{"composer.json"},
		Managers: []Manager{{
			Name: "composer", Lockfiles: []string{"composer.lock"},
			Programs: []Program{{"php", "php-cli"}, {"composer", "composer"}},
			Caches: []Cache{
				{Name: "composer-cache", Env: "COMPOSER_CACHE_DIR"},
				{Name: "composer-home", Env: "COMPOSER_HOME"},
			},
			OfflineEnv: []string{"COMPOSER_DISABLE_NETWORK=1"},
			Commands:   Commands{Install: "composer install --no-interaction", Test: "vendor/bin/phpunit", Lint: "composer validate --strict"},
			Presets:    []string{"packagist", "github"},
		}},
	},
	{
		Name:    "dotnet",
		Markers: []string{"global.json", "*.sln", "*.csproj", "*.fsproj", "*.vbproj"},
		Managers: []Manager{{
			Name: "dotnet", Lockfiles: []string{"packages.lock.json"},
			Programs: []Program{{"dotnet", ""}},
			Caches: []Cache{
				{Name: "nuget", Env: "NUGET_PACKAGES"},
				{Name: "dotnet-home", Env: "DOTNET_CLI_HOME"},
				// NuGet takes packages from fallback folders before it
				// downloads, without writing to them.
				{Name: "nuget-fallback", Env: "NUGET_FALLBACK_PACKAGES", Host: []string{"$NUGET_PACKAGES", "~/.nuget/packages"}},
			},
			Env:      []string{"DOTNET_CLI_TELEMETRY_OPTOUT=1", "DOTNET_NOLOGO=1", "DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1"},
			Commands: Commands{Install: "dotnet restore", Build: "dotnet build", Test: "dotnet test", Format: "dotnet format --verify-no-changes"},
			Presets:  []string{"nuget"},
		}},
	},
	{
		Name:    "swift",
		Markers: []string{"Package.swift"},
		Managers: []Manager{{
			Name: "swiftpm", Lockfiles: []string{"Package.resolved"},
			Programs: []Program{{"swift", ""}},
			// SwiftPM keeps its dependencies and outputs in .build/ in the
			// workspace.
			Commands: Commands{Install: "swift package resolve", Build: "swift build", Test: "swift test"},
			Presets:  []string{"github"},
		}},
	},
	{
		Name:    "elixir",
		Markers: []string{"mix.exs"},
		Managers: []Manager{{
			Name: "mix", Lockfiles: []string{"mix.lock"},
			Programs: []Program{{"mix", "elixir"}, {"erl", "erlang-base"}},
			Caches: []Cache{
				{Name: "mix", Env: "MIX_HOME"},
				{Name: "hex", Env: "HEX_HOME"},
			},
			OfflineEnv: []string{"HEX_OFFLINE=1"},
			Commands:   Commands{Install: "mix deps.get", Build: "mix compile", Test: "mix test", Lint: "mix compile --warnings-as-errors", Format: "mix format --check-formatted"},
			Presets:    []string{"hex"},
		}},
	},
	{
		Name:    "cmake",
		Markers: []string{"CMakeLists.txt"},
		Managers: []Manager{{
			Name:     "cmake",
			Programs: []Program{{"cmake", "cmake"}, {"cc", "gcc"}},
			Caches:   []Cache{ccache},
			Commands: Commands{Build: "cmake -S . -B build && cmake --build build", Test: "ctest --test-dir build"},
		}},
	},
	{
		Name:    "make",
		Markers: []string{"GNUmakefile", "makefile", "Makefile"},
		Managers: []Manager{{
			Name:     "make",
			Programs: []Program{{"make", "make"}},
			Caches:   []Cache{ccache},
			Commands: Commands{Build: "make", Test: "make test"},
		}},
	},
}

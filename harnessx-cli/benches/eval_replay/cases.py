# Writes cases.toml: 100 cases, each its own prompt and file, each expecting the answer
# the loopback model (model.py) gives after its nine tool calls: ten turns a case.
lines = ['[defaults]', 'tools = ["list_directory"]', '']
for i in range(100):
    lines += ['[[case]]', f'name = "case {i}"', f'prompt = "Look around, case {i}."',
              f'files = {{ "f{i}.txt" = "x" }}', 'expect.output_contains = ["Done"]', '']
open('cases.toml', 'w').write('\n'.join(lines))
